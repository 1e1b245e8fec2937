import ArgumentParser
import DepotClient
import Foundation

struct Migrate: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Migrate a store to the entities its configuration file declares now.",
        discussion: """
            A field whose type changes, a new required field, or an optional field made \
            required says how its values come with convert, an expression over the stored \
            record (DESIGN §17's grammar):
              budget = { type = "int", convert = "trunc:(budget * 100)" }
            A migrate job converts every record in saves, with progress, and resumes where \
            it was after a crash; reads and saves see the entity as the store holds it \
            until the switch, one save that gives the fields their new type. A record \
            whose conversion fails is rejected: deleted (logged in the history) and \
            written whole to the job's rejects file. A migration that would reject every \
            record fails and changes nothing.

            --dry-run reads the configuration file and lists every record the conversion \
            would reject, changing nothing. Without it, the daemon reads the file, brings \
            the store to it (as systemctl reload does) and runs the migrate jobs; depotctl \
            follows them to their end. A store opening with such a change (at start, or on \
            a reload) starts its migrate job by itself.

            Example:
              depotctl migrate travel --dry-run
              depotctl migrate travel
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to migrate.", valueName: "store")) var store: String
    @Option(help: ArgumentHelp("Only this entity (with --dry-run).", valueName: "name")) var entity: String?
    @Flag(name: .customLong("dry-run"), help: "List the changes and the records they would reject; change nothing.")
    var dryRun = false
    @Option(help: ArgumentHelp("Rejects to list per entity (with --dry-run; --json lists all).", valueName: "n"))
    var limit: Int = 20

    func execute(_ client: DaemonClient) async throws {
        let answer = try await client.migrate(store: store, entity: entity, dryRun: dryRun)
        if dryRun {
            if global.json { try Out.json(answer); return }
            guard !answer.entities.isEmpty else {
                Out.line("nothing to migrate in \(store): it holds its entities as configured")
                return
            }
            for e in answer.entities {
                Out.line(
                    "\(e.entity): "
                        + e.changes.map { c in
                            "\(c.field) \(c.from ?? "(new)") → \(c.to) (convert \(c.convert))"
                        }.joined(separator: "; "))
                var line = "  \(Format.grouped(e.records)) records, \(Format.grouped(e.rejected)) would be rejected"
                if e.fails { line += ": every record, so the migration would fail and change nothing" }
                Out.line(line)
                guard !e.rejects.isEmpty else { continue }
                var table = Table(["IDENTIFIER", "FIELD", "VALUE", "REASON"])
                for r in e.rejects.prefix(limit) {
                    table.add([r.identifier.display, r.field, r.value.display, r.reason])
                }
                Out.line(table.render())
                if e.rejects.count > limit {
                    Out.line("  … and \(Format.grouped(e.rejects.count - limit)) more (--limit, or --json for all)")
                }
            }
            return
        }
        guard !answer.jobs.isEmpty else {
            if global.json { try Out.json(answer) } else { Out.line("nothing to migrate in \(store)") }
            return
        }
        var ends: [Job] = []
        for job in answer.jobs {
            let last = try await JobFlow.follow(client, job.id, quiet: global.json)
            ends.append(last)
            if !global.json, last.state == .succeeded {
                var line =
                    "migrated \(store).\(last.entity ?? "?"): \(Format.grouped(last.read)) records converted"
                if last.rejected > 0 {
                    line +=
                        ", \(Format.grouped(last.rejected)) rejected and deleted (depotctl job \(last.id) --rejects)"
                }
                Out.line(line)
            }
        }
        if global.json { try Out.json(MigrationAnswer(store: store, dryRun: false, entities: [], jobs: ends)) }
        if let failed = ends.first(where: { $0.state != .succeeded }) {
            throw Failure(
                "job \(failed.id) \(failed.state == .cancelled ? "was cancelled" : "failed: \(failed.error ?? "no reason given")")"
            )
        }
    }
}
