import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Consumers: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a store's history consumers, with how far behind each one is.",
        discussion: """
            A consumer is a named, durable cursor over the history, one per system that \
            follows the store (a search index, a cache, an audit): it reads after its token \
            and acknowledges what it processed. Pruning never removes what an active consumer \
            has not acknowledged. LAG counts the transactions after its token, AGE is how old \
            the oldest of them is; a LOST consumer was overridden by history_max_retention \
            and must be reset.

            Example:
              depotctl consumers travel
              depotctl consumers travel --json
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store whose consumers to list.", valueName: "store")) var store: String

    func execute(_ client: DaemonClient) async throws {
        let consumers = try await client.consumers(store: store)
        if global.json { try Out.json(ConsumerList(consumers: consumers)); return }
        guard !consumers.isEmpty else {
            Out.line("no consumers on \(store) (depotctl consumer create \(store) NAME adds one)")
            return
        }
        var table = Table(["NAME", "TOKEN", "LAG", "AGE", "ACKNOWLEDGED", "STATE"], rightAligned: [1, 2, 3])
        for c in consumers { table.add(Self.row(c)) }
        Out.line(table.render())
    }

    static func row(_ c: Consumer) -> [String] {
        [
            c.name, c.token, Format.grouped(c.lagTransactions), Format.duration(c.lagSeconds),
            Format.date(c.acknowledgedAt), c.state
        ]
    }
}
