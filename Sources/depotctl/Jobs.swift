import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Jobs: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the daemon's jobs, oldest first.",
        discussion: """
            Shows every job the daemon knows: imports, deletes, updates, dedupes, exports \
            and prunes, with their state and how far they got.

            Example:
              depotctl jobs
              depotctl jobs --json | jq '.jobs[] | select(.state == "failed")'
            """)
    @OptionGroup var global: Global

    func execute(_ client: DaemonClient) async throws {
        let jobs = try await client.jobs()
        if global.json { try Out.json(JobList(jobs: jobs)); return }
        var table = Table(
            ["ID", "KIND", "STORE", "ENTITY", "STATE", "ROWS", "REJECTED", "CREATED", "SOURCE"], rightAligned: [5, 6])
        for j in jobs {
            let rows = j.kind == "import" ? j.read : j.deleted + j.updated + j.exported
            table.add([
                j.id, j.kind, j.store, j.entity ?? "", Terminal.state(j.state), Format.grouped(rows),
                j.kind == "import" ? Format.grouped(j.rejected) : "", Format.date(j.created),
                j.watchFile.map { URL(fileURLWithPath: $0).lastPathComponent } ?? j.author
            ])
        }
        Out.line(jobs.isEmpty ? "no jobs yet" : table.render())
    }
}
