import ArgumentParser
import Foundation
import NIOHTTP1

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
              depotctl history prune travel --older-than 30d
            """,
        subcommands: [HistoryList.self, HistoryPrune.self],
        defaultSubcommand: HistoryList.self)
}

struct HistoryList: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print transactions oldest first, from the start or after a token; --follow waits for new ones.",
        discussion: """
            A page holds at most --limit transactions; the next page starts after the last \
            token shown (--after TOKEN). With --follow, new transactions print as they \
            commit, until Ctrl-C. --json prints {"transactions": [...]}, or one transaction \
            per line with --follow.

            Example:
              depotctl history travel --entity Trip --limit 20
              depotctl history travel --after 42 --json
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store whose history to read.", valueName: "store")) var store: String
    @Option(help: ArgumentHelp("Start after this token: the last one of the page before.", valueName: "token")) var after: String?
    @Option(help: "Only the changes to this entity.") var entity: String?
    @Option(help: "At most this many transactions (default 100).") var limit: Int?
    @Flag(help: "Keep running and print new transactions as they commit, until Ctrl-C.") var follow = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more.") }
    }

    func execute(_ client: DaemonClient) async throws {
        var query: [String] = []
        if let after { query.append("after=\(after.encoded)") }
        if let entity { query.append("entity=\(entity.encoded)") }
        if let limit { query.append("limit=\(limit)") }
        if follow { query.append("follow=true") }
        let path = "/v1/stores/\(store.encoded)/history" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        if follow {
            Interrupt.onInterrupt {}
            try await client.lines(.GET, path) { line in
                if global.json { Out.line(line) } else {
                    Self.show(try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8)))
                }
                return true
            }
            return
        }
        let bytes = try await client.call(.GET, path)
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let transactions = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["transactions"]?.array ?? []
        if transactions.isEmpty {
            Out.line(after == nil ? "no history yet" : "nothing after token \(after!)")
            return
        }
        for t in transactions { Self.show(t) }
        if transactions.count == (limit ?? 100), let last = transactions.last?["token"]?.string {
            Out.line(Terminal.dim("next page: depotctl history \(store) --after \(last)" + (limit.map { " --limit \($0)" } ?? "")))
        }
    }

    /// One transaction: its head line, then its changes (a long one summed up).
    static func show(_ t: JSONValue) {
        let changes = t["changes"]?.array ?? []
        var head = "\(Terminal.bold(t["token"]?.string ?? "?"))  \(Format.date(t["timestamp"]?.string))  \(t["author"]?.string ?? "")"
        if let job = t["job"]?.string { head += Terminal.dim("  job \(job)") }
        Out.line(head + "  \(Format.grouped(changes.count)) change" + (changes.count == 1 ? "" : "s"))
        let shown = changes.count > 10 ? Array(changes.prefix(8)) : changes
        for c in shown {
            let id = c["identifier"].map { $0.string ?? $0.text } ?? ""
            Out.line("  \((c["kind"]?.string ?? "").padding(toLength: 6, withPad: " ", startingAt: 0))  \(c["entity"]?.string ?? "")  \(id)")
        }
        if shown.count < changes.count {
            var kinds: [String: Int] = [:]
            for c in changes.dropFirst(shown.count) { kinds[c["kind"]?.string ?? "?", default: 0] += 1 }
            Out.line(Terminal.dim("  … and " + kinds.sorted { $0.key < $1.key }.map { "\(Format.grouped($0.value)) \($0.key)" }.joined(separator: ", ")))
        }
    }
}

struct HistoryPrune: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Drop history before a token or older than a duration.",
        discussion: """
            The records stay; only the log of their changes goes. Reading history after a \
            pruned token then says it expired.

            Example:
              depotctl history prune travel --before 1200
              depotctl history prune travel --older-than 30d
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store whose history to prune.", valueName: "store")) var store: String
    @Option(help: ArgumentHelp("Drop the transactions before this token.", valueName: "token")) var before: String?
    @Option(name: .customLong("older-than"),
            help: ArgumentHelp("Drop the transactions older than this: 7d, 12h, 30m.", valueName: "duration"))
    var olderThan: String?

    func validate() throws {
        if (before == nil) == (olderThan == nil) {
            throw ValidationError("say which history to drop: --before TOKEN or --older-than DURATION (one of the two).")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        let query = before.map { "before=\($0.encoded)" } ?? "older_than=\(olderThan!.encoded)"
        let bytes = try await client.call(.DELETE, "/v1/stores/\(store.encoded)/history?\(query)")
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let pruned = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["pruned"]?.int ?? 0
        Out.line("pruned \(Format.grouped(pruned)) transaction\(pruned == 1 ? "" : "s") from \(store)'s history")
    }
}
