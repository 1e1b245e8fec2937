import ArgumentParser
import DepotClient
import Foundation

struct Duplicates: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find records that share the values of some fields; --resolve keeps one of each group.",
        discussion: """
            Lists each group of records with equal values of the --by fields. With \
            --resolve, a dedupe job keeps the first (oldest) or last record of each group \
            and deletes the others, logged in history like any delete.

            Example:
              depotctl duplicates travel Trip --by name,startDate
              depotctl duplicates travel Trip --by name --resolve keep-first
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity to look in.", valueName: "entity")) var entity: String
    @Option(help: "The fields whose equal values make records duplicates, comma-separated.") var by: String
    @Option(help: "Keep one record of each group and delete the others: keep-first (the oldest) or keep-last.")
    var resolve: String?

    func validate() throws {
        if let resolve, !["keep-first", "keep-last"].contains(resolve) {
            throw ValidationError("--resolve must be keep-first or keep-last, not \"\(resolve)\".")
        }
        if (commaList(by) ?? []).isEmpty { throw ValidationError("--by needs at least one field.") }
    }

    func execute(_ client: DaemonClient) async throws {
        let fields = commaList(by) ?? []
        if let resolve {
            var request = JobRequest(kind: "dedupe", store: store, entity: entity)
            request.settings.by = fields
            request.settings.keep = resolve
            let accepted = try await client.submit(request)
            let last = try await JobFlow.follow(client, accepted.id, quiet: global.json)
            try JobFlow.finish(last, json: global.json) {
                "deleted \(RecordPrinter.plural($0.deleted, "duplicate")), kept the \(resolve == "keep-first" ? "first" : "last") of each group"
            }
            return
        }
        // The daemon's answer as it is for --json: a large one is passed on, not decoded and encoded again.
        let bytes = try await client.duplicatesJSON(store: store, entity: entity, DuplicatesBody(by: fields))
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let groups = try JSONDecoder().decode(DuplicatesAnswer.self, from: Data(bytes)).groups
        var table = Table(fields + ["COUNT", "IDENTIFIERS"], rightAligned: [fields.count])
        for g in groups {
            table.add(
                g.values.map(\.display) + [
                    Format.grouped(g.identifiers.count),
                    g.identifiers.map { $0.string ?? $0.text }.joined(separator: ", ")
                ])
        }
        Out.line(groups.isEmpty ? "no duplicates by \(fields.joined(separator: ", "))" : table.render())
    }
}
