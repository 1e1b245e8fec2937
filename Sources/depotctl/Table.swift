import Foundation

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
        s.contains("\u{1B}")
            ? s.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression) : s
    }

    /// How many columns the text takes on a terminal.
    static func visible(_ s: String) -> Int { plain(s).count }

    /// A cell shows on one line.
    static func flat(_ s: String) -> String {
        s.contains(where: \.isNewline)
            ? s.replacingOccurrences(of: "\r\n", with: "⏎").replacingOccurrences(of: "\n", with: "⏎") : s
    }
}
