import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct HistoryPrune: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Drop history before a token or older than a duration.",
        discussion: """
            The records stay; only the log of their changes goes. Reading history after a \
            pruned token then says it expired. A prune stops at the oldest transaction that \
            an active consumer has not acknowledged, and says which consumer held it back.

            Example:
              depotctl history prune travel --before 1200
              depotctl history prune travel --older-than 30d
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store whose history to prune.", valueName: "store")) var store: String
    @Option(help: ArgumentHelp("Drop the transactions before this token.", valueName: "token")) var before: String?
    @Option(
        name: .customLong("older-than"),
        help: ArgumentHelp("Drop the transactions older than this: 7d, 12h, 30m.", valueName: "duration"))
    var olderThan: String?

    func validate() throws {
        if (before == nil) == (olderThan == nil) {
            throw ValidationError(
                "say which history to drop: --before TOKEN or --older-than DURATION (one of the two).")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        let answer = try await client.prune(store: store, before: before, olderThan: olderThan)
        if global.json { try Out.json(answer); return }
        let pruned = answer.pruned
        Out.line("pruned \(Format.grouped(pruned)) transaction\(pruned == 1 ? "" : "s") from \(store)'s history")
        if let held = answer.heldBackBy {
            Out.line(
                "stopped at token \(held.token): consumer \(held.consumer) "
                    + "has not acknowledged what follows (depotctl consumers \(store))")
        }
        for lost in answer.lost ?? [] {
            Out.line(
                "consumer \(lost) is lost: history_max_retention pruned what it had not "
                    + "acknowledged; reset it with depotctl consumer reset \(store) \(lost)")
        }
    }
}
