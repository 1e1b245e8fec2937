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
        try showConsumer(try await start.reset(name, store: store, client), json: global.json, "reset")
    }
}
