import DepotClient
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
    static func state(_ state: Job.State) -> String { self.state(state.rawValue) }

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
