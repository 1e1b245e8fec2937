import Foundation

/// What stdout and stderr are connected to.
enum Terminal {
    static let isTTY = isatty(1) == 1
    static let stderrIsTTY = isatty(2) == 1

    /// Colours only on a terminal, and never when `NO_COLOR` is set (no-color.org).
    static let colors: Bool = {
        let env = ProcessInfo.processInfo.environment
        return isTTY && env["NO_COLOR"].map(\.isEmpty) ?? true && env["TERM"] != "dumb"
    }()

    /// The terminal's width; without a terminal, no limit.
    static var width: Int {
        guard isTTY else { return Int.max }
        var size = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 80
    }

    static func paint(_ text: String, _ sgr: String) -> String {
        colors ? "\u{1B}[\(sgr)m\(text)\u{1B}[0m" : text
    }

    static func bold(_ text: String) -> String { paint(text, "1") }
    static func dim(_ text: String) -> String { paint(text, "2") }

    /// A job state, coloured by how it went.
    static func state(_ state: String) -> String {
        switch state {
        case "succeeded": paint(state, "32")
        case "failed": paint(state, "31")
        case "cancelled": paint(state, "33")
        case "running": paint(state, "36")
        default: state
        }
    }
}

/// Writes to stdout and stderr without Foundation's buffering surprises.
enum Out {
    static func line(_ text: String = "") { write(1, text + "\n") }
    static func error(_ text: String) { write(2, text + "\n") }

    static func write(_ fd: Int32, _ text: String) {
        write(fd, Array(text.utf8))
    }

    /// Writes all of `bytes`; false when the descriptor refuses (a closed pipe, a full disk).
    @discardableResult
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buf in
            var done = 0
            while done < buf.count {
                let n = Foundation.write(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
    }
}

/// Numbers, dates and durations the way people read them.
enum Format {
    /// 1234567 → "1,234,567".
    static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// At most two decimals, integer part grouped.
    static func decimal(_ d: Double) -> String {
        // Past 10^15 (and for inf, nan) Int cannot hold the whole part: as Swift writes it.
        guard d.isFinite, d.magnitude < 1e15 else { return "\(d)" }
        let rounded = (d * 100).rounded() / 100
        let whole = Int(rounded.magnitude)
        let cents = Int(((rounded.magnitude - Double(whole)) * 100).rounded())
        let sign = rounded < 0 ? "-" : ""
        return sign + grouped(whole) + (cents == 0 ? "" : String(format: ".%02d", cents).replacingOccurrences(of: "0$", with: "", options: .regularExpression))
    }

    /// "2026-11-21T07:35:15.341Z" → "2026-11-21 08:35:15" in local time.
    static func date(_ iso: String?) -> String {
        guard let iso else { return "" }
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = parser.date(from: iso) ?? ISO8601DateFormatter().date(from: iso) else { return iso }
        let out = DateFormatter()
        out.dateFormat = "yyyy-MM-dd HH:mm:ss"
        out.timeZone = .current
        return out.string(from: date)
    }

    /// 75 → "1m 15s".
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "?" }
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m \(String(format: "%02d", s % 60))s" }
        return "\(s / 3600)h \(String(format: "%02d", s % 3600 / 60))m"
    }

    /// RFC 4180: quoted when it holds a comma, a quote or a line break.
    static func csvField(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// An aligned table, sized to the terminal: when it is too wide, the widest
/// columns give way and their cells end in "…". Numbers align right.
struct Table {
    var headers: [String]
    var rows: [[String]] = []
    var rightAligned: Set<Int> = []

    init(_ headers: [String], rightAligned: Set<Int> = []) {
        self.headers = headers
        self.rightAligned = rightAligned
    }

    mutating func add(_ row: [String]) { rows.append(row) }

    func render(width: Int = Terminal.width) -> String {
        var widths = headers.indices.map { i in
            max(headers[i].count, rows.map { i < $0.count ? Self.visible(Self.flat($0[i])) : 0 }.max() ?? 0)
        }
        let gap = 2
        while widths.reduce(0, +) + gap * (widths.count - 1) > width {
            guard let widest = widths.indices.max(by: { widths[$0] < widths[$1] }), widths[widest] > 6 else { break }
            widths[widest] -= 1
        }
        func line(_ cells: [String], header: Bool) -> String {
            var parts: [String] = []
            for (i, w) in widths.enumerated() {
                var cell = i < cells.count ? Self.flat(cells[i]) : ""
                if Self.visible(cell) > w { cell = String(Self.plain(cell).prefix(max(0, w - 1))) + "…" }
                let pad = String(repeating: " ", count: max(0, w - Self.visible(cell)))
                let text = rightAligned.contains(i) ? pad + cell : (i == widths.count - 1 ? cell : cell + pad)
                parts.append(header ? Terminal.bold(text) : text)
            }
            return parts.joined(separator: String(repeating: " ", count: gap))
        }
        return ([line(headers, header: true)] + rows.map { line($0, header: false) }).joined(separator: "\n")
    }

    /// The text without its colour codes.
    static func plain(_ s: String) -> String {
        s.contains("\u{1B}") ? s.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression) : s
    }

    /// How many columns the text takes on a terminal.
    static func visible(_ s: String) -> Int { plain(s).count }

    /// A cell shows on one line.
    static func flat(_ s: String) -> String {
        s.contains(where: \.isNewline) ? s.replacingOccurrences(of: "\r\n", with: "⏎").replacingOccurrences(of: "\n", with: "⏎") : s
    }
}

/// A job's progress: a live bar on a terminal (percent, rows, rows/s, ETA,
/// rejected so far), plain lines at most once a second elsewhere.
final class ProgressDisplay {
    /// Off a terminal, a line a second, the first after a second: a job
    /// shorter than that prints only its result, the same on a busy machine
    /// as on an idle one.
    private var lastPlain = Date()
    private var drawn = false
    private let tty = Terminal.isTTY

    func show(_ job: Job) {
        let rows = job.kind == "import" ? job.read : job.deleted + job.updated + job.exported
        var parts = ["\(Format.grouped(rows)) rows"]
        if job.rate > 0 { parts.append("\(Format.grouped(Int(min(job.rate, 1e15)))) rows/s") }
        if let eta = job.eta, job.state == "running", eta > 0 { parts.append("ETA \(Format.duration(eta))") }
        if job.kind == "import" { parts.append("\(Format.grouped(job.rejected)) rejected") }
        let percent: Int? = job.bytesTotal > 0 ? Int(100 * min(max(Double(job.bytesRead) / Double(job.bytesTotal), 0), 1)) : nil
        if tty {
            let text = (percent.map { String(format: "%3d%%  ", $0) } ?? "") + parts.joined(separator: "  ")
            let room = max(10, min(30, Terminal.width - 75))
            var bar = ""
            if let percent, room >= 10 {
                let filled = room * percent / 100
                bar = "[" + String(repeating: "=", count: filled) + (filled < room ? ">" : "")
                    + String(repeating: " ", count: max(0, room - filled - 1)) + "] "
            }
            Out.write(1, "\r\u{1B}[K" + bar + text)
            drawn = true
        } else if Date().timeIntervalSince(lastPlain) >= 1 || job.isFinal {
            lastPlain = Date()
            Out.line("job \(job.id) \(job.state)" + (percent.map { " \($0)%" } ?? "") + ": " + parts.joined(separator: ", "))
        }
    }

    /// Clears the bar, so that what follows starts on a clean line.
    func clear() {
        if tty, drawn {
            Out.write(1, "\r\u{1B}[K")
            drawn = false
        }
    }
}
