import ArgumentParser
import DepotClient
import Foundation

struct Delete: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete the records a predicate matches, as a job.",
        discussion: """
            Deletes in batches, each logged in history (with the fields the entity \
            preserves on delete). The predicate is required: TRUEPREDICATE deletes all.

            Example:
              depotctl delete travel Trip --where "endDate < '2020-01-01'"
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to change.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to delete.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Delete the records for which this predicate holds.") var predicateText:
        String
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        let accepted = try await JobFlow.submit(
            client,
            [
                "kind": .string("delete"), "store": .string(store), "entity": .string(entity),
                "where": .string(predicateText)
            ])
        let (last, text) = try await JobFlow.follow(client, try Job.decode(accepted).id, quiet: global.json)
        try JobFlow.finish(last, text: text, json: global.json) {
            "deleted \(RecordPrinter.plural($0.deleted, "record")) from \(store).\(entity)"
        }
    }
}
