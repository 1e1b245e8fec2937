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
            let accepted = try await JobFlow.submit(
                client,
                [
                    "kind": .string("dedupe"), "store": .string(store), "entity": .string(entity),
                    "by": .array(fields.map(JSONValue.string)), "keep": .string(resolve)
                ])
            let (last, text) = try await JobFlow.follow(client, try Job.decode(accepted).id, quiet: global.json)
            try JobFlow.finish(last, text: text, json: global.json) {
                "deleted \(RecordPrinter.plural($0.deleted, "duplicate")), kept the \(resolve == "keep-first" ? "first" : "last") of each group"
            }
            return
        }
        let bytes = try await post(
            client, dataPath(store, entity, "duplicates"), ["by": .array(fields.map(JSONValue.string))])
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let groups = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["groups"]?.array ?? []
        var table = Table(fields + ["COUNT", "IDENTIFIERS"], rightAligned: [fields.count])
        for g in groups {
            let values = g["values"]?.array ?? []
            let ids = g["identifiers"]?.array ?? []
            table.add(
                values.map(\.display) + [
                    Format.grouped(ids.count), ids.map { $0.string ?? $0.text }.joined(separator: ", ")
                ])
        }
        Out.line(groups.isEmpty ? "no duplicates by \(fields.joined(separator: ", "))" : table.render())
    }
}
