import ArgumentParser
import DepotClient
import Foundation

struct IDs: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "ids",
        abstract: "Print the identifiers of the records, one per line.",
        discussion: """
            For scripts: the identifiers a predicate matches, sorted and limited as asked.

            Example:
              depotctl ids travel Trip --where "budget < 100" --sort id --limit 50
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose identifiers to print.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Only the records for which this predicate holds.") var predicateText:
        String?
    @Option(
        parsing: .unconditional,
        help: "The fields to sort by, comma-separated; a leading - sorts descending, as in -budget,id.")
    var sort: String?
    @Option(help: "At most this many identifiers.") var limit: Int?
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        let ids = try await client.identifiers(
            FetchRequest(store: store, entity: entity, where: predicateText, sort: commaList(sort) ?? [], limit: limit))
        if global.json { try Out.json(IdentifiersAnswer(identifiers: ids)); return }
        for id in ids { Out.line(id.string ?? id.text) }
    }
}
