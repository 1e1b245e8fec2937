import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Cancel: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a job: at once if it waits, at its next save if it runs.",
        discussion: """
            What a running job saved before it stops stays saved; an import's checkpoint \
            goes with it.

            Example:
              depotctl cancel j90467cda1cb6
            """)
    @OptionGroup var global: Global

    @OptionGroup var job: JobID
    var id: String { job.id }

    func execute(_ client: DaemonClient) async throws {
        let j = try await client.cancel(id)
        if global.json { try Out.json(j); return }
        switch j.state {
        case .cancelled: Out.line("job \(j.id) cancelled")
        case .running: Out.line("job \(j.id) stops at its next save (depotctl follow \(j.id) to see it end)")
        default: Out.line("job \(j.id) had already ended: \(j.state.rawValue)")
        }
    }
}
