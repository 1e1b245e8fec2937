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
        var body: [String: JSONValue] = ["result": .string("count")]
        if let predicateText { body["where"] = .string(predicateText) }
        let bytes = try await post(client, dataPath(store, entity, "fetch"), body)
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        Out.line(Format.grouped(try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["count"]?.int ?? 0))
    }
}
