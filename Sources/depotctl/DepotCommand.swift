import ArgumentParser
import DepotClient
import Foundation

/// A command that talks to the daemon: its failures become one line on
/// stderr and exit status 1.
protocol DepotCommand: AsyncParsableCommand {
    var global: Global { get }
    /// The predicate the command sends, to mark where a predicate error is.
    var predicate: String? { get }
    /// The text an error's position is in: the predicate, unless the
    /// error's message names another (a computed field's expression).
    func markedText(for message: String) -> String?
    func execute(_ client: DaemonClient) async throws
}

extension DepotCommand {
    var predicate: String? { nil }
    func markedText(for message: String) -> String? { predicate }

    mutating func run() async throws {
        do {
            try await execute(global.client)
        } catch var failure as Failure {
            if failure.caret != nil, let text = markedText(for: failure.message) { failure.caret?.text = text }
            report(failure)
            throw ExitCode(1)
        } catch let error as DepotClientError {
            var failure = Failure(error)
            if failure.caret != nil, let text = markedText(for: failure.message) { failure.caret?.text = text }
            report(failure)
            throw ExitCode(1)
        }
    }

    func report(_ failure: Failure) {
        let prefix = Terminal.stderrIsTTY && Terminal.colors ? "\u{1B}[31mdepotctl:\u{1B}[0m" : "depotctl:"
        Out.error("\(prefix) \(failure.message)")
        // A conflict's fields: their value when read, now, and the one refused.
        for c in failure.conflicts {
            Out.error(
                "  \(c.field): was \(c.base?.display ?? "(not kept)"), now \(c.stored.display), yours \(c.yours.display)"
            )
        }
        if let caret = failure.caret, !caret.text.isEmpty {
            Out.error("  " + caret.text.replacingOccurrences(of: "\n", with: " "))
            Out.error("  " + String(repeating: " ", count: max(0, caret.position - 1)) + "^")
        }
    }
}
