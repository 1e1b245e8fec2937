import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct ConsumerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consumer",
        abstract: "Create, acknowledge, reset or drop a history consumer.",
        discussion: """
            A consumer remembers how far a downstream system got in a store's history, in \
            the store file, so it survives restarts: read with `depotctl history STORE \
            --consumer NAME`, then acknowledge the last token processed.

            Example:
              depotctl consumer create travel indexer --from beginning
              depotctl history travel --consumer indexer
              depotctl consumer ack travel indexer 42
            """,
        subcommands: [ConsumerCreate.self, ConsumerAck.self, ConsumerReset.self, ConsumerDrop.self])
}

/// `--from now|beginning|TOKEN`, shared by create and reset.
struct ConsumerStart: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Where it starts: now (only what commits from now on), beginning (all the history kept) or a token to read after.",
            valueName: "now|beginning|token"))
    var from = "now"
}

/// Prints a consumer the daemon answered with, as JSON or as one line.
func showConsumer(_ c: Consumer, json: Bool, _ verb: String) throws {
    if json { try Out.json(c); return }
    let lag = c.lagTransactions
    Out.line(
        "\(verb) consumer \(c.name) at token \(c.token): "
            + "\(Format.grouped(lag)) transaction\(lag == 1 ? "" : "s") to read")
}

extension ConsumerStart {
    /// Creates consumer `name` on `store`, reading from where `from` says.
    func create(_ name: String, store: String, _ client: DaemonClient) async throws -> Consumer {
        switch Consumer.Start(rawValue: from) {
        case let start?: try await client.createConsumer(name, store: store, from: start)
        case nil: try await client.createConsumer(name, store: store, after: from)
        }
    }

    /// Moves consumer `name` of `store` to where `from` says.
    func reset(_ name: String, store: String, _ client: DaemonClient) async throws -> Consumer {
        switch Consumer.Start(rawValue: from) {
        case let start?: try await client.resetConsumer(name, store: store, from: start)
        case nil: try await client.resetConsumer(name, store: store, after: from)
        }
    }
}
