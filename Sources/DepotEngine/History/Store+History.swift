import GRDB

extension Store {
    /// Deletes the history transactions before `token` (the transaction of
    /// `token` itself is kept) and remembers where the kept history starts, so
    /// that a client asking after a pruned token gets
    /// ``DepotError/Code/historyExpired`` rather than a silent gap.
    ///
    /// - Returns: the number of transactions deleted.
    /// - Throws: ``DepotError/Code/invalidToken`` for a token the store never issued.
    @discardableResult
    public func pruneHistory(before token: HistoryToken) async throws -> Int {
        try await prune(store: name) { db in
            let issued = try HistoryQuery.lastIssued(db)
            guard token.id <= issued + 1 else {
                throw DepotError(.invalidToken, "store \(JSONText.quoted(self.name)) never issued token "
                    + "\(token.id) (its latest is \(issued))")
            }
            return token.id - 1
        }
    }

    /// Deletes the history transactions committed more than `age` ago.
    ///
    /// For example:
    ///
    /// ```swift
    /// try await store.pruneHistory(olderThan: .seconds(7 * 86_400))
    /// ```
    ///
    /// - Returns: the number of transactions deleted.
    @discardableResult
    public func pruneHistory(olderThan age: Duration) async throws -> Int {
        let cutoff = Timestamp.ago(age)
        return try await prune(store: name) { db in
            try Int64.fetchOne(db, sql: "SELECT max(id) FROM depot_transactions WHERE timestamp < ?",
                               arguments: [cutoff]) ?? 0
        }
    }

    /// Prunes the history past the store's configured retention, if it has one.
    ///
    /// - Returns: the number of transactions deleted.
    @discardableResult
    public func applyHistoryRetention() async throws -> Int {
        guard let retention = configuration.historyRetention else { return 0 }
        return try await pruneHistory(olderThan: retention)
    }

    /// Deletes every transaction up to the id `through` returns, in one save.
    private func prune(store: String, through: @escaping @Sendable (Database) throws -> Int64) async throws -> Int {
        do {
            return try await pool.write { db in
                let last = try through(db)
                let already = try HistoryQuery.prunedThrough(db)
                guard last > already else { return 0 }
                try db.execute(sql: "DELETE FROM depot_changes WHERE txn <= ?", arguments: [last])
                try db.execute(sql: "DELETE FROM depot_transactions WHERE id <= ?", arguments: [last])
                let deleted = db.changesCount
                try db.execute(sql: "INSERT INTO depot_meta(key, value) VALUES ('history_pruned_through', ?) "
                    + "ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [last])
                return deleted
            }
        } catch {
            throw Store.translate(error, store: store)
        }
    }
}
