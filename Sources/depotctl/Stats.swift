import ArgumentParser
import DepotClient
import Foundation

struct Stats: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Count, sum, average, minimum and maximum of a field, optionally per group.",
        discussion: """
            Computed inside SQLite, over all records or those a predicate matches.

            Example:
              depotctl stats travel Trip --field budget --group-by destination
              depotctl stats travel Trip --field budget --where "isFavorite == true" --json
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity to compute over.", valueName: "entity")) var entity: String
    @Option(help: "The field to compute the statistics of.") var field: String
    @Option(
        name: .customLong("group-by"),
        help: "Fields to group by, comma-separated: one row per combination of their values.")
    var groupBy: String?
    @Option(name: .customLong("where"), help: "Only the records for which this predicate holds.") var predicateText:
        String?
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        var body: [String: JSONValue] = [
            "field": .string(field),
            "functions": .array(["count", "sum", "avg", "min", "max"].map(JSONValue.string))
        ]
        let groups = commaList(groupBy) ?? []
        if !groups.isEmpty { body["group_by"] = .array(groups.map(JSONValue.string)) }
        if let predicateText { body["where"] = .string(predicateText) }
        let bytes = try await post(client, dataPath(store, entity, "aggregate"), body)
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let rows = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["rows"]?.array ?? []
        let functions = ["count", "sum", "avg", "min", "max"]
        var table = Table(groups + functions, rightAligned: Set(groups.count..<(groups.count + functions.count)))
        for r in rows {
            table.add(groups.map { r["group"]?[$0]?.display ?? "" } + functions.map { r[$0]?.display ?? "" })
        }
        Out.line(table.render())
    }
}
