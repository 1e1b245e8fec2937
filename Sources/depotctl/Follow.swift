import ArgumentParser
import DepotClient
import Foundation

struct Follow: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow a job's progress until it ends.",
        discussion: """
            Shows a progress bar on a terminal (plain lines otherwise) and how the job \
            ended; exits non-zero when it failed. With --json, prints each event as a line \
            of JSON. Ctrl-C stops following; the job carries on.

            Example:
              depotctl follow j90467cda1cb6
            """)
    @OptionGroup var global: Global

    @OptionGroup var job: JobID
    var id: String { job.id }

    func execute(_ client: DaemonClient) async throws {
        Interrupt.onInterrupt { if Terminal.isTTY { Out.write(1, "\r\u{1B}[K") } }
        let json = global.json
        let last = try await JobFlow.follow(client, id, quiet: json, onEvent: json ? { try Out.json($0) } : nil)
        if !json { Out.line("job \(last.id) \(Terminal.state(last.state)): \(last.summary)") }
        switch last.state {
        case .succeeded: return
        case .cancelled: throw Failure("job \(last.id) was cancelled")
        default: throw Failure("job \(last.id) failed: \(last.error ?? "no reason given")")
        }
    }
}
