import GRDB

extension Store {
    /// Deletes the history transactions before `token` (the transaction of
    /// `token` itself is kept) and remembers where the kept history starts, so
    /// that a client asking after a pruned token gets
    /// ``DepotError/Code/historyExpired`` rather than a silent gap.
    ///
    /// Like every prune, it stops at the oldest transaction an active
    /// consumer has not acknowledged (see ``PruneOutcome``).
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` for a token the store never issued.
    @discardableResult
    public func pruneHistory(before token: HistoryToken) async throws -> PruneOutcome {
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
    @discardableResult
    public func pruneHistory(olderThan age: Duration) async throws -> PruneOutcome {
        let cutoff = Timestamp.ago(age)
        return try await prune(store: name) { db in
            try Int64.fetchOne(db, sql: "SELECT max(id) FROM depot_transactions WHERE timestamp < ?",
                               arguments: [cutoff]) ?? 0
        }
    }

    /// Prunes the history past the store's configured retention, if it has one.
    @discardableResult
    public func applyHistoryRetention() async throws -> PruneOutcome {
        guard let retention = configuration.historyRetention else { return PruneOutcome() }
        return try await pruneHistory(olderThan: retention)
    }

    /// Deletes every transaction up to the id `through` returns, in one save,
    /// but none that an active consumer has not acknowledged. First, the
    /// consumers that would hold the prune back with an unacknowledged
    /// transaction older than `historyMaxRetention` are marked lost.
    private func prune(store: String, through: @escaping @Sendable (Database) throws -> Int64) async throws
        -> PruneOutcome {
        let cutoff = configuration.historyMaxRetention.map(Timestamp.ago)
        do {
            return try await pool.write { db in
                var last = try through(db)
                let already = try HistoryQuery.prunedThrough(db)
                var outcome = PruneOutcome()
                guard last > already else { return outcome }
                if let cutoff {
                    outcome.lost = try ConsumerQuery.markLost(db, below: last, olderThan: cutoff)
                }
                if let holder = try ConsumerQuery.oldestActive(db), holder.token < last {
                    last = holder.token
                    outcome.heldBackBy = (holder.name, HistoryToken(holder.token))
                }
                guard last > already else { return outcome }
                try db.execute(sql: "DELETE FROM depot_changes WHERE txn <= ?", arguments: [last])
                try db.execute(sql: "DELETE FROM depot_transactions WHERE id <= ?", arguments: [last])
                outcome.deleted = db.changesCount
                try db.execute(sql: "INSERT INTO depot_meta(key, value) VALUES ('history_pruned_through', ?) "
                    + "ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [last])
                return outcome
            }
        } catch {
            throw Store.translate(error, store: store)
        }
    }
}
