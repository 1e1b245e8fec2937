import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct ConsumerReset: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Start a consumer again from now, the beginning or a token; the way out of lost.",
        discussion: """
            Example:
              depotctl consumer reset travel indexer
              depotctl consumer reset travel indexer --from 1200
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The consumer's store.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The consumer.", valueName: "name")) var name: String
    @OptionGroup var start: ConsumerStart

    func execute(_ client: DaemonClient) async throws {
        let bytes = try await client.call(
            .POST, "/v1/stores/\(store.encoded)/consumers/\(name.encoded)/reset",
            body: .json(ConsumerBody(from: start.from)))
        try showConsumer(bytes, json: global.json, "reset")
    }
}
