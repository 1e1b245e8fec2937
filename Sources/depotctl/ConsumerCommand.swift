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
func showConsumer(_ bytes: [UInt8], json: Bool, _ verb: String) throws {
    if json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
    let c = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    let lag = c["lag_transactions"]?.int ?? 0
    Out.line(
        "\(verb) consumer \(c["name"]?.string ?? "") at token \(c["token"]?.string ?? "?"): "
            + "\(Format.grouped(lag)) transaction\(lag == 1 ? "" : "s") to read")
}
