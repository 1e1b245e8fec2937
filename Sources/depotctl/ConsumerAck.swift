import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct ConsumerAck: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "ack",
        abstract: "Acknowledge every transaction up to a token: the consumer has processed them.",
        discussion: """
            Pruning may then remove them. An older token than the consumer's changes nothing.

            Example:
              depotctl consumer ack travel indexer 42
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The consumer's store.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The consumer.", valueName: "name")) var name: String
    @Argument(help: ArgumentHelp("The last token it processed.", valueName: "token")) var token: String

    func execute(_ client: DaemonClient) async throws {
        try showConsumer(
            try await client.acknowledge(name, store: store, token: token), json: global.json, "acknowledged")
    }
}
