import GRDB

extension StoreReader {
    /// The transactions after `token`, oldest first.
    ///
    /// - Parameters:
    ///   - token: the last token the client saw; `nil` starts at the oldest kept transaction.
    ///   - entity: only changes of this entity, and only transactions that have some.
    ///   - author: only transactions by this author.
    ///   - limit: at most this many transactions.
    ///   - maxChanges: at most this many changes: a transaction with more is
    ///     read in parts, each ending at a token inside it (``HistoryPage``).
    /// - Throws: ``DepotError/Code/historyExpired`` when transactions after
    ///   `token` were pruned (the client missed changes and must start over);
    ///   ``DepotError/Code/invalidToken`` for a token the store never issued;
    ///   ``DepotError/Code/unknownEntity``.
    public func history(
        after token: HistoryToken? = nil, entity: String? = nil, author: String? = nil,
        limit: Int = 100, maxChanges: Int = .max
    ) async throws -> [HistoryTransaction] {
        if let entity { _ = try schema.entity(entity) }
        guard limit > 0 else { throw DepotError(.invalidArgument, "limit must be at least 1") }
        let storeName = schema.name
        return try await read { db in
            try HistoryQuery.transactions(
                db, store: storeName, after: token, entity: entity,
                author: author, limit: limit, maxChanges: maxChanges)
        }
    }

    /// The token of the newest transaction, or `nil` when the history is empty.
    public func latestToken() async throws -> HistoryToken? {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT max(id) FROM depot_transactions").map(HistoryToken.init)
        }
    }

    /// The tokens of the history transactions saved by job `job`, oldest first.
    public func transactions(ofJob job: String) async throws -> [HistoryToken] {
        try await read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM depot_transactions WHERE job = ? ORDER BY id", arguments: [job])
                .map(HistoryToken.init)
        }
    }

    /// The transactions after `token`, then each new one as it commits, until
    /// the task is cancelled or the store closes.
    ///
    /// For example:
    ///
    /// ```swift
    /// for try await transaction in store.reader.followHistory(after: lastSeen) {
    ///     print(transaction.token, transaction.changes.count)
    /// }
    /// ```
    public func followHistory(
        after token: HistoryToken? = nil, entity: String? = nil,
        author: String? = nil
    ) -> HistoryFollower {
        HistoryFollower(reader: self, after: token, entity: entity, author: author)
    }
}
