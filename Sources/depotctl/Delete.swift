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
        var request = JobRequest(kind: "delete", store: store, entity: entity)
        request.settings.where = predicateText
        let accepted = try await client.submit(request)
        let last = try await JobFlow.follow(client, accepted.id, quiet: global.json)
        try JobFlow.finish(last, json: global.json) {
            "deleted \(RecordPrinter.plural($0.deleted, "record")) from \(store).\(entity)"
        }
    }
}
