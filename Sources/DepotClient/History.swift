import NIOHTTP1

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
        let query = Self.query([("after", token), ("entity", entity), ("author", author), ("limit", String(limit))])
        return try await json(TransactionPage.self, .GET, "/v1/stores/\(Self.escaped(store))/history" + query)
            .transactions
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
        try await json(
            PruneAnswer.self, .DELETE,
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
            body: ConsumerBody(name: name, from: start.rawValue))
    }

    /// A store's consumers, with their tokens and lags.
    ///
    /// ```swift
    /// let behind = try await client.consumers(store: "travel").filter { $0.lagTransactions > 1000 }
    /// ```
    public func consumers(store: String) async throws -> [Consumer] {
        try await json(ConsumerList.self, .GET, "/v1/stores/\(Self.escaped(store))/consumers").consumers
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
        let query = Self.query([("consumer", consumer), ("entity", entity), ("limit", String(limit))])
        return try await json(TransactionPage.self, .GET, "/v1/stores/\(Self.escaped(store))/history" + query)
            .transactions
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
            body: AckBody(token: token))
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
            body: ConsumerBody(from: start.rawValue))
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
