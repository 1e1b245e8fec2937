import DepotClient
import Foundation

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
        // A backup counts bytes copied, of the store's.
        var parts =
            job.kind == "backup"
            ? ["\(Format.bytes(job.bytesRead)) of \(Format.bytes(job.bytesTotal))"] : ["\(Format.grouped(rows)) rows"]
        if job.rate > 0 { parts.append("\(Format.grouped(Int(min(job.rate, 1e15)))) rows/s") }
        if let eta = job.eta, job.state == .running, eta > 0 { parts.append("ETA \(Format.duration(eta))") }
        if job.kind == "import" { parts.append("\(Format.grouped(job.rejected)) rejected") }
        let percent: Int? =
            job.bytesTotal > 0 ? Int(100 * min(max(Double(job.bytesRead) / Double(job.bytesTotal), 0), 1)) : nil
        if tty {
            let text = (percent.map { String(format: "%3d%%  ", $0) } ?? "") + parts.joined(separator: "  ")
            let room = max(10, min(30, Terminal.width - 75))
            var bar = ""
            if let percent, room >= 10 {
                let filled = room * percent / 100
                bar =
                    "[" + String(repeating: "=", count: filled) + (filled < room ? ">" : "")
                    + String(repeating: " ", count: max(0, room - filled - 1)) + "] "
            }
            Out.write(1, "\r\u{1B}[K" + bar + text)
            drawn = true
        } else if Date().timeIntervalSince(lastPlain) >= 1 || job.isFinal {
            lastPlain = Date()
            Out.line(
                "job \(job.id) \(job.state.rawValue)" + (percent.map { " \($0)%" } ?? "") + ": "
                    + parts.joined(separator: ", "))
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
