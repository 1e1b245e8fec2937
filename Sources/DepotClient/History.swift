import NIOHTTP1

/// One save that changed data: its token, when, who, which job, and one
/// change per record touched (DESIGN §2, §11).
///
/// ```swift
/// for t in try await client.history(store: "travel", after: lastToken) {
///     for c in t.changes where c.kind == .update { print(c.identifier, c.fields ?? []) }
/// }
/// ```
public struct HistoryTransaction: Sendable, Hashable, Decodable {
    /// Its token: pass it as `after` to read what came later.
    ///
    /// ```swift
    /// let page = try await client.history(store: "travel", after: last.token)
    /// ```
    public var token: String
    /// When it committed (ISO 8601).
    ///
    /// ```swift
    /// print(transaction.timestamp)     // "2026-11-24T18:52:48.165Z"
    /// ```
    public var timestamp: String
    /// Who made it.
    ///
    /// ```swift
    /// let mine = transactions.filter { $0.author == "alice" }
    /// ```
    public var author: String
    /// The job it belongs to, if any.
    ///
    /// ```swift
    /// if let job = transaction.job { print(try await client.job(job).kind) }
    /// ```
    public var job: String?
    /// Whether more of its changes follow after ``token``, a place inside
    /// it: a page holds at most so many changes, so a large transaction
    /// comes in parts; `nil` (or `false`) for its last or only part.
    ///
    /// ```swift
    /// if transaction.continues == true { print("more of", transaction.token, "on the next page") }
    /// ```
    public var continues: Bool?
    /// What it changed.
    ///
    /// ```swift
    /// let inserts = transaction.changes.filter { $0.kind == .insert }.count
    /// ```
    public var changes: [HistoryChange]
}

/// One record's change in a ``HistoryTransaction``.
///
/// ```swift
/// if change.kind == .update, let old = change.old, let new = change.new { print(old, "→", new) }
/// ```
public struct HistoryChange: Sendable, Hashable, Decodable {
    /// What happened to the record.
    ///
    /// ```swift
    /// if change.kind == .delete { cache[change.identifier] = nil }
    /// ```
    public enum Kind: String, Sendable, Hashable, Decodable {
        /// It was inserted.
        ///
        /// ```swift
        /// let added = t.changes.filter { $0.kind == .insert }
        /// ```
        case insert
        /// Some of its fields changed.
        ///
        /// ```swift
        /// let edited = t.changes.filter { $0.kind == .update }
        /// ```
        case update
        /// It was deleted.
        ///
        /// ```swift
        /// let removed = t.changes.filter { $0.kind == .delete }.map(\.identifier)
        /// ```
        case delete
    }

    /// The entity.
    ///
    /// ```swift
    /// if change.entity == "Trip" { reindex(change.identifier) }
    /// ```
    public var entity: String
    /// The record's identifier (an array for a compound one).
    ///
    /// ```swift
    /// let id = change.identifier.string ?? change.identifier.text
    /// ```
    public var identifier: JSONValue
    /// What happened.
    ///
    /// ```swift
    /// switch change.kind { case .insert, .update: upsert(change); case .delete: remove(change) }
    /// ```
    public var kind: Kind
    /// An update's changed fields.
    ///
    /// ```swift
    /// if change.fields?.contains("budget") == true { recomputeTotals() }
    /// ```
    public var fields: [String]?
    /// A delete's preserved fields (`preserve_on_delete`).
    ///
    /// ```swift
    /// print(change.tombstone?["name"]?.string ?? "")     // preserve_on_delete = ["name"]
    /// ```
    public var tombstone: JSONValue?
    /// With `history = "values"`: the values before (update, delete).
    ///
    /// ```swift
    /// let before = change.old?["budget"]?.double
    /// ```
    public var old: JSONValue?
    /// With `history = "values"`: the values after (insert, update).
    ///
    /// ```swift
    /// let after = change.new?["budget"]?.double
    /// ```
    public var new: JSONValue?
}

/// A durable cursor over a store's history (DESIGN §11): one per
/// downstream system, which reads after its token and acknowledges.
///
/// ```swift
/// let indexer = try await client.createConsumer("indexer", store: "travel", from: .beginning)
/// print(indexer.token, indexer.lagTransactions)
/// ```
public struct Consumer: Sendable, Hashable, Decodable {
    /// Its name.
    ///
    /// ```swift
    /// let names = try await client.consumers(store: "travel").map(\.name)
    /// ```
    public var name: String
    /// The last transaction it acknowledged.
    ///
    /// ```swift
    /// let next = try await client.history(store: "travel", after: consumer.token)
    /// ```
    public var token: String
    /// Transactions committed after its token.
    ///
    /// ```swift
    /// if consumer.lagTransactions > 10_000 { alert("\(consumer.name) is behind") }
    /// ```
    public var lagTransactions: Int
    /// Seconds since the oldest of those committed.
    ///
    /// ```swift
    /// if consumer.lagSeconds > 3600 { alert("an hour behind") }
    /// ```
    public var lagSeconds: Double
    /// When it last acknowledged.
    ///
    /// ```swift
    /// print(consumer.acknowledgedAt ?? "never")
    /// ```
    public var acknowledgedAt: String?
    /// `active`, or `lost` once the history it needs was pruned.
    ///
    /// ```swift
    /// if consumer.state == "lost" { try await client.resetConsumer(consumer.name, store: "travel", from: .now) }
    /// ```
    public var state: String

    enum CodingKeys: String, CodingKey {
        case name, token, lagTransactions = "lag_transactions", lagSeconds = "lag_seconds"
        case acknowledgedAt = "acknowledged_at", state
    }

    /// Where a new or reset consumer starts.
    ///
    /// ```swift
    /// try await client.createConsumer("audit", store: "travel", from: .beginning)
    /// ```
    public enum Start: String, Sendable, Hashable {
        /// At the oldest transaction kept: it reads the whole history.
        ///
        /// ```swift
        /// try await client.resetConsumer("indexer", store: "travel", from: .beginning)     // rebuild the index
        /// ```
        case beginning
        /// After the latest: it reads what commits from now on.
        ///
        /// ```swift
        /// try await client.createConsumer("alerts", store: "travel", from: .now)
        /// ```
        case now
    }
}

extension DepotClient {
    /// A page of a store's history, oldest first, after a token (or from
    /// the beginning), optionally of one entity or author.
    ///
    /// ```swift
    /// let page = try await client.history(store: "travel", after: token, entity: "Trip", limit: 500)
    /// ```
    ///
    /// - Throws: ``DepotClientError/Code/historyExpired`` when `after` was
    ///   pruned away; ``DepotClientError/Code/invalidToken`` for a token never issued.
    public func history(
        store: String, after token: String? = nil, entity: String? = nil, author: String? = nil,
        limit: Int = 100
    ) async throws -> [HistoryTransaction] {
        struct Answer: Decodable { var transactions: [HistoryTransaction] }
        let query = Self.query([("after", token), ("entity", entity), ("author", author), ("limit", String(limit))])
        return try await json(Answer.self, .GET, "/v1/stores/\(Self.escaped(store))/history" + query).transactions
    }

    /// The history after a token as it commits, live: the transactions
    /// there are first, then each new one. Ends when the task is cancelled
    /// or the loop is left; throws when the daemon goes away.
    ///
    /// ```swift
    /// for try await t in client.followHistory(store: "travel", after: token) { apply(t); token = t.token }
    /// ```
    public func followHistory(
        store: String, after token: String? = nil, entity: String? = nil,
        author: String? = nil
    ) -> AsyncThrowingStream<HistoryTransaction, any Error> {
        let query = Self.query([("after", token), ("entity", entity), ("author", author), ("follow", "true")])
        return stream("/v1/stores/\(Self.escaped(store))/history" + query, as: HistoryTransaction.self)
    }

    /// Deletes the history before a token; answers how many transactions went.
    ///
    /// ```swift
    /// let pruned = try await client.pruneHistory(store: "travel", before: token)
    /// ```
    @discardableResult
    public func pruneHistory(store: String, before token: String) async throws -> Int {
        struct Answer: Decodable { var pruned: Int }
        return try await json(
            Answer.self, .DELETE,
            "/v1/stores/\(Self.escaped(store))/history" + Self.query([("before", token)])
        ).pruned
    }

    /// Creates a consumer, starting at the beginning of the history or now.
    ///
    /// ```swift
    /// try await client.createConsumer("cache", store: "travel")
    /// ```
    @discardableResult
    public func createConsumer(_ name: String, store: String, from start: Consumer.Start = .now) async throws
        -> Consumer
    {
        try await json(
            Consumer.self, .POST, "/v1/stores/\(Self.escaped(store))/consumers",
            body: ["name": .string(name), "from": .string(start.rawValue)])
    }

    /// A store's consumers, with their tokens and lags.
    ///
    /// ```swift
    /// let behind = try await client.consumers(store: "travel").filter { $0.lagTransactions > 1000 }
    /// ```
    public func consumers(store: String) async throws -> [Consumer] {
        struct Answer: Decodable { var consumers: [Consumer] }
        return try await json(Answer.self, .GET, "/v1/stores/\(Self.escaped(store))/consumers").consumers
    }

    /// A page of the history after a consumer's token (reading does not move it).
    ///
    /// ```swift
    /// let page = try await client.history(store: "travel", consumer: "indexer", limit: 100)
    /// if let last = page.last { try await client.acknowledge("indexer", store: "travel", token: last.token) }
    /// ```
    public func history(
        store: String, consumer: String, entity: String? = nil,
        limit: Int = 100
    ) async throws -> [HistoryTransaction] {
        struct Answer: Decodable { var transactions: [HistoryTransaction] }
        let query = Self.query([("consumer", consumer), ("entity", entity), ("limit", String(limit))])
        return try await json(Answer.self, .GET, "/v1/stores/\(Self.escaped(store))/history" + query).transactions
    }

    /// Moves a consumer's token forward: what it has handled up to `token`.
    ///
    /// ```swift
    /// try await client.acknowledge("indexer", store: "travel", token: t.token)
    /// ```
    @discardableResult
    public func acknowledge(_ consumer: String, store: String, token: String) async throws -> Consumer {
        try await json(
            Consumer.self, .POST,
            "/v1/stores/\(Self.escaped(store))/consumers/\(Self.escaped(consumer))/ack",
            body: ["token": .string(token)])
    }

    /// Moves a consumer to the beginning of the history or to now (a lost one comes back).
    ///
    /// ```swift
    /// try await client.resetConsumer("indexer", store: "travel", from: .now)
    /// ```
    @discardableResult
    public func resetConsumer(_ consumer: String, store: String, from start: Consumer.Start) async throws -> Consumer {
        try await json(
            Consumer.self, .POST,
            "/v1/stores/\(Self.escaped(store))/consumers/\(Self.escaped(consumer))/reset",
            body: ["from": .string(start.rawValue)])
    }

    /// Drops a consumer (it no longer holds back pruning).
    ///
    /// ```swift
    /// try await client.dropConsumer("indexer", store: "travel")
    /// ```
    public func dropConsumer(_ consumer: String, store: String) async throws {
        _ = try await call(.DELETE, "/v1/stores/\(Self.escaped(store))/consumers/\(Self.escaped(consumer))")
    }

    /// `?a=1&b=2` of the members that have a value.
    static func query(_ members: [(String, String?)]) -> String {
        let parts = members.compactMap { key, value in value.map { "\(key)=\(escaped($0))" } }
        return parts.isEmpty ? "" : "?" + parts.joined(separator: "&")
    }
}
