import ArgumentParser
import DepotClient
import Foundation

struct Count: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Count the records, all or those a predicate matches.",
        discussion: """
            Prints the number; with --json, {"count": N}.

            Example:
              depotctl count travel Trip --where "destination == 'Paris'"
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to count.", valueName: "entity")) var entity: String
    @Option(
        name: .customLong("where"),
        help: "Only count the records for which this predicate holds, such as \"budget > 1000\".")
    var predicateText: String?
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        let count = try await client.count(FetchRequest(store: store, entity: entity, where: predicateText))
        if global.json { try Out.json(CountAnswer(count: count)); return }
        Out.line(Format.grouped(count))
    }
}
