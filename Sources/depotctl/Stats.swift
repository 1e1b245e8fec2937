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
        let groups = commaList(groupBy) ?? []
        let functions = AggregateFunction.allCases
        let rows = try await client.aggregate(
            store: store, entity: entity, field: field, functions: functions, groupBy: groups, where: predicateText)
        if global.json {
            // The rows as the daemon answers them: the group's values, then each statistic.
            try Out.json(
                AggregateAnswer(
                    rows: rows.map { row in
                        var object = Dictionary(uniqueKeysWithValues: row.values.map { ($0.key.rawValue, $0.value) })
                        if !groups.isEmpty { object["group"] = .object(row.group) }
                        return object
                    }))
            return
        }
        var table = Table(
            groups + functions.map(\.rawValue), rightAligned: Set(groups.count..<(groups.count + functions.count)))
        for r in rows {
            table.add(groups.map { r.group[$0]?.display ?? "" } + functions.map { r[$0]?.display ?? "" })
        }
        Out.line(table.render())
    }
}
