import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct ConsumerCreate: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a consumer that reads the history from now, from the beginning or after a token.",
        discussion: """
            Example:
              depotctl consumer create travel indexer
              depotctl consumer create travel warehouse --from beginning
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store whose history it follows.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("Its name: letters, digits, '.', '_' or '-'.", valueName: "name")) var name: String
    @OptionGroup var start: ConsumerStart

    func execute(_ client: DaemonClient) async throws {
        try showConsumer(try await start.create(name, store: store, client), json: global.json, "created")
    }
}
