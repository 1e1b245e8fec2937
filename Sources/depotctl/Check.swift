import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Check: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the references that point at nothing (kept by imports with --references defer).",
        discussion: """
            For each to-one relationship of the store, counts the records whose reference \
            names a record that does not exist, and lists the first of them. Exits with \
            status 1 when there are any, so that scripts can wait for a store to be whole.

            Example:
              depotctl check shop
              depotctl check shop --limit 0 --json
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to check.", valueName: "store")) var store: String
    @Option(help: "List at most this many dangling references (default 100; 0 only counts them).") var limit: Int?

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more.") }
    }

    func execute(_ client: DaemonClient) async throws {
        let result = try await client.check(store: store, limit: limit)
        let total = result.total
        if global.json {
            try Out.json(result)
        } else {
            var counts = Table(["ENTITY", "RELATIONSHIP", "TO", "DANGLING"], rightAligned: [3])
            for r in result.relationships {
                counts.add([r.entity, r.relationship, r.to, Format.grouped(r.dangling)])
            }
            Out.line(counts.rows.isEmpty ? Terminal.dim("store \(store) has no relationships") : counts.render())
            let dangling = result.dangling
            if !dangling.isEmpty {
                Out.line()
                var list = Table(["ENTITY", "IDENTIFIER", "RELATIONSHIP", "POINTS AT"])
                for d in dangling {
                    list.add([d.entity, d.identifier.display, d.relationship, "no \(d.to) \(d.reference.text)"])
                }
                Out.line(list.render())
                if dangling.count < total {
                    Out.line(Terminal.dim("… and \(Format.grouped(total - dangling.count)) more"))
                }
            }
        }
        if total > 0 { throw ExitCode(1) }
    }
}
