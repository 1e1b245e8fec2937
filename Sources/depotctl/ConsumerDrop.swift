import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct ConsumerDrop: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "drop",
        abstract: "Drop a consumer; what it held back may then be pruned.",
        discussion: """
            Example:
              depotctl consumer drop travel indexer
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The consumer's store.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The consumer.", valueName: "name")) var name: String

    func execute(_ client: DaemonClient) async throws {
        try await client.dropConsumer(name, store: store)
        if global.json { try Out.json(DroppedConsumer(dropped: name)); return }
        Out.line("dropped consumer \(name) of \(store)")
    }
}
