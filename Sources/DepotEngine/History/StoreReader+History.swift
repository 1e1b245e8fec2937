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

    /// The newest `limit` changes of the record of `identifier` that the
    /// history keeps, oldest first, each in its transaction (which holds
    /// only that record's changes): a record's history, old → new.
    ///
    /// The history has no index by record (every import would pay for one):
    /// this reads the changes of the entity through, newest first, until it
    /// has `limit` of them.
    ///
    /// - Throws: ``DepotError/Code/unknownEntity``.
    public func recordHistory(_ entity: String, identifier: [Value], limit: Int) async throws
        -> [HistoryTransaction]
    {
        let entity = try schema.entity(entity)
        var id = ""
        Identifier.appendJSON(identifier, to: &id)
        let (name, key) = (entity.name, id)
        return try await read { db in
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT c.txn, t.timestamp, t.author, t.job, c.kind, c.fields, c.tombstone, c.old, c.new, "
                        + "c.layout FROM depot_changes c JOIN depot_transactions t ON t.id = c.txn "
                        + "WHERE c.entity = ? AND c.identifier = ? ORDER BY c.id DESC LIMIT ?"),
                arguments: [name, key, limit])
            var layouts: [Int64: [String]] = [:]
            var transactions: [HistoryTransaction] = []
            for row in rows.reversed() {
                let txn: Int64 = row[0]
                let change = try CompactValues.change(
                    db, entity: name, identifier: key, kind: row[4], fields: row[5], tombstone: row[6], old: row[7],
                    new: row[8], layout: row[9], layouts: &layouts)
                if transactions.last?.token.id == txn {
                    transactions[transactions.count - 1].changes.append(change)
                } else {
                    transactions.append(
                        HistoryTransaction(
                            token: HistoryToken(txn), timestamp: row[1], author: row[2], job: row[3],
                            changes: [change]))
                }
            }
            return transactions
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
        author: String? = nil, maxChanges: Int = 10_000
    ) -> HistoryFollower {
        HistoryFollower(reader: self, after: token, entity: entity, author: author, maxChanges: maxChanges)
    }
}
