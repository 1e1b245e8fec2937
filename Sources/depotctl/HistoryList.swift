import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct HistoryList: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print transactions oldest first, from the start or after a token; --follow waits for new ones.",
        discussion: """
            A page holds at most --limit transactions; the next page starts after the last \
            token shown (--after TOKEN); --consumer NAME starts after the consumer's \
            acknowledged token. With --follow, new transactions print as they \
            commit, until Ctrl-C. --json prints {"transactions": [...]}, or one transaction \
            per line with --follow.

            Example:
              depotctl history travel --entity Trip --limit 20
              depotctl history travel --after 42 --json
              depotctl history travel --consumer indexer --follow
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store whose history to read.", valueName: "store")) var store: String
    @Option(help: ArgumentHelp("Start after this token: the last one of the page before.", valueName: "token"))
    var after: String?
    @Option(
        help: ArgumentHelp(
            "Start after this consumer's acknowledged token (reading does not move it).",
            valueName: "name")) var consumer: String?
    @Option(help: "Only the changes to this entity.") var entity: String?
    @Option(help: "At most this many transactions (default 100).") var limit: Int?
    @Flag(help: "Keep running and print new transactions as they commit, until Ctrl-C.") var follow = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more.") }
        if after != nil, consumer != nil {
            throw ValidationError("give --after or --consumer, not both: a consumer reads after its own token.")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        if follow {
            Interrupt.onInterrupt {}
            try await client.historyLines(
                store: store, after: after, consumer: consumer, entity: entity, limit: limit, follow: true
            ) { line in
                if global.json {
                    Out.line(line)
                } else {
                    Self.show(try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)))
                }
                return true
            }
            return
        }
        // The page as the daemon wrote it: --json passes its values on as they are stored.
        var page = ""
        try await client.historyLines(store: store, after: after, consumer: consumer, entity: entity, limit: limit) {
            page = $0
            return false
        }
        if global.json { Out.line(page.trimmed); return }
        let transactions = try JSONDecoder().decode(JSONValue.self, from: Data(page.utf8))["transactions"]?.array ?? []
        if transactions.isEmpty {
            Out.line(
                consumer.map { "consumer \($0) has read everything" }
                    ?? (after == nil ? "no history yet" : "nothing after token \(after!)"))
            return
        }
        for t in transactions { Self.show(t) }
        if transactions.count == (limit ?? 100), let last = transactions.last?["token"]?.string {
            let next =
                consumer == nil
                ? "depotctl history \(store) --after \(last)"
                : "depotctl consumer ack \(store) \(consumer!) \(last), then depotctl history \(store) --consumer \(consumer!)"
            Out.line(Terminal.dim("next page: " + next + (limit.map { " --limit \($0)" } ?? "")))
        }
    }

    /// An update's changes as `field: old → new`, when the history keeps values.
    static func values(_ c: JSONValue) -> String {
        guard c["kind"]?.string == "update", case .object(let new)? = c["new"] else { return "" }
        let old = c["old"]
        let fields = c["fields"]?.array?.compactMap(\.string) ?? new.keys.sorted()
        return "  " + fields.map { "\($0): \(old?[$0]?.text ?? "?") → \(new[$0]?.text ?? "?")" }.joined(separator: ", ")
    }

    /// One transaction: its head line, then its changes (a long one summed up).
    static func show(_ t: JSONValue) {
        let changes = t["changes"]?.array ?? []
        var head =
            "\(Terminal.bold(t["token"]?.string ?? "?"))  \(Format.date(t["timestamp"]?.string))  \(t["author"]?.string ?? "")"
        if let job = t["job"]?.string { head += Terminal.dim("  job \(job)") }
        Out.line(head + "  \(Format.grouped(changes.count)) change" + (changes.count == 1 ? "" : "s"))
        let shown = changes.count > 10 ? Array(changes.prefix(8)) : changes
        for c in shown {
            let id = c["identifier"].map { $0.string ?? $0.text } ?? ""
            Out.line(
                "  \((c["kind"]?.string ?? "").padding(toLength: 6, withPad: " ", startingAt: 0))  \(c["entity"]?.string ?? "")  \(id)"
                    + values(c))
        }
        if shown.count < changes.count {
            var kinds: [String: Int] = [:]
            for c in changes.dropFirst(shown.count) { kinds[c["kind"]?.string ?? "?", default: 0] += 1 }
            Out.line(
                Terminal.dim(
                    "  … and "
                        + kinds.sorted { $0.key < $1.key }.map { "\(Format.grouped($0.value)) \($0.key)" }.joined(
                            separator: ", ")))
        }
    }
}
