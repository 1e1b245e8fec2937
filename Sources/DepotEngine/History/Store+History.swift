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
        try token.requireWhole(for: "a prune")
        return try await prune(store: name) { db in
            let issued = try HistoryQuery.lastIssued(db)
            guard token.id <= issued + 1 else {
                throw HistoryErrors.pruneNeverIssued(store: self.name, token: token, issued: issued)
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
            try Int64.fetchOne(
                db, sql: "SELECT max(id) FROM depot_transactions WHERE timestamp < ?",
                arguments: [cutoff]) ?? 0
        }
    }

    /// Prunes the history past the store's configured retention, if it has one.
    @discardableResult
    public func applyHistoryRetention() async throws -> PruneOutcome {
        guard let retention = configuration.historyRetention else { return PruneOutcome() }
        return try await pruneHistory(olderThan: retention)
    }

    /// Deletes every transaction up to the id `through` returns, but none
    /// that an active consumer has not acknowledged. First, the consumers
    /// that would hold the prune back with an unacknowledged transaction
    /// older than `historyMaxRetention` are marked lost.
    ///
    /// The deletes go in saves of about `historyPruneStep` changes each, so
    /// that a large backlog (a first retention pass over years of history)
    /// neither holds the writer for long nor grows the WAL without bound;
    /// each save moves `history_pruned_through`, so a prune stopped half way
    /// leaves a consistent history. Each save looks at the consumers again:
    /// one created meanwhile stops the rest.
    private func prune(store: String, through: @escaping @Sendable (Database) throws -> Int64) async throws
        -> PruneOutcome
    {
        let cutoff = configuration.historyMaxRetention.map(Timestamp.ago)
        let step = max(1, configuration.historyPruneStep)
        do {
            var (outcome, target) = try await pool.write { db -> (PruneOutcome, Int64) in
                let target = try through(db)
                var outcome = PruneOutcome()
                if let cutoff, target > (try HistoryQuery.prunedThrough(db)) {
                    outcome.lost = try ConsumerQuery.markLost(db, below: target, olderThan: cutoff)
                }
                return (outcome, target)
            }
            while true {
                let frozenTarget = target
                let (deleted, holder) = try await pool.write { db -> (Int?, PruneOutcome.HeldBack?) in
                    var last = frozenTarget
                    var heldBack: PruneOutcome.HeldBack?
                    if let holder = try ConsumerQuery.oldestActive(db), holder.token < last {
                        last = holder.token
                        heldBack = PruneOutcome.HeldBack(consumer: holder.name, token: HistoryToken(holder.token))
                    }
                    let already = try HistoryQuery.prunedThrough(db)
                    guard last > already else { return (nil, heldBack) }
                    // The transaction that ends this save's share of changes.
                    let boundary = try Int64.fetchOne(
                        db,
                        sql: "SELECT txn FROM depot_changes WHERE txn > ? "
                            + "ORDER BY txn LIMIT 1 OFFSET ?", arguments: [already, step - 1])
                    let upTo = min(last, boundary ?? last)
                    try db.execute(
                        sql: "DELETE FROM depot_changes WHERE txn > ? AND txn <= ?", arguments: [already, upTo])
                    try db.execute(
                        sql: "DELETE FROM depot_transactions WHERE id > ? AND id <= ?", arguments: [already, upTo])
                    let deleted = db.changesCount
                    try db.execute(
                        sql: "INSERT INTO depot_meta(key, value) VALUES ('history_pruned_through', ?) "
                            + "ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [upTo])
                    return (deleted, heldBack)
                }
                if let holder { outcome.heldBackBy = holder; target = min(target, holder.token.id) }
                guard let deleted else { break }
                outcome.deleted += deleted
                outcome.saves += 1
            }
            return outcome
        } catch {
            throw Store.translate(error, store: store)
        }
    }
}
