import ArgumentParser
import Foundation

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read a store's history of changes, or prune it.",
        discussion: """
            Every save is a transaction with a token, a time, an author and its changes \
            (insert, update, delete of an identifier). `depotctl history STORE` reads them \
            oldest first, a page at a time; `depotctl history prune STORE` drops old ones.

            Example:
              depotctl history travel --limit 5
              depotctl history travel --after 42 --follow
              depotctl history travel --consumer indexer
              depotctl history prune travel --older-than 30d
            """,
        subcommands: [HistoryList.self, HistoryPrune.self],
        defaultSubcommand: HistoryList.self)
}
