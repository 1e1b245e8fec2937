import GRDB

/// The SQL of history reads and pruning.
enum HistoryQuery {
    static func prunedThrough(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM depot_meta WHERE key = 'history_pruned_through'"))
            ?? 0
    }

    static func lastIssued(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'depot_transactions'"))
            ?? 0
    }

    /// Throws when the history after `after` cannot be read whole:
    /// ``DepotError/Code/historyExpired`` when some of it was pruned,
    /// ``DepotError/Code/invalidToken`` for a token never issued.
    static func check(_ db: Database, store: String, after: Int64) throws {
        let pruned = try prunedThrough(db)
        if after < pruned {
            throw HistoryErrors.expired(store: store, after: after, pruned: pruned)
        }
        let issued = try lastIssued(db)
        if after > issued {
            throw HistoryErrors.neverIssued(store: store, token: after, issued: issued)
        }
    }

    /// The page after `token`: at most `limit` transactions and
    /// `maxChanges` changes (``HistoryPage``).
    static func transactions(
        _ db: Database, store: String, after token: HistoryToken?, entity: String?,
        author: String?, limit: Int, maxChanges: Int = .max
    ) throws -> [HistoryTransaction] {
        let after = token?.wholeThrough ?? 0
        if token != nil { try check(db, store: store, after: after) }
        var sql = "SELECT id, timestamp, author, job FROM depot_transactions t WHERE id > ?"
        var arguments: [(any DatabaseValueConvertible)?] = [after]
        if let author {
            sql += " AND author = ?"
            arguments.append(author)
        }
        if let entity {
            sql += " AND EXISTS (SELECT 1 FROM depot_changes c WHERE c.txn = t.id AND c.entity = ?)"
            arguments.append(entity)
        }
        sql += " ORDER BY id LIMIT ?"
        arguments.append(limit)
        var transactions: [HistoryTransaction] = []
        var positions: [Int64: Int] = [:]
        // Cached: a handful of shapes, read at every commit by each follower;
        // compiling them each time was a tenth of a follower's cost (GRDB's
        // authorizer runs at each compile).
        for row in try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments)) {
            let id: Int64 = row[0]
            positions[id] = transactions.count
            transactions.append(
                HistoryTransaction(
                    token: HistoryToken(id), timestamp: row[1], author: row[2],
                    job: row[3], changes: []))
        }
        guard let first = transactions.first?.token.id, let last = transactions.last?.token.id else { return [] }
        var changeSQL =
            "SELECT txn, entity, identifier, kind, fields, tombstone, old, new, layout FROM depot_changes "
            + "WHERE txn BETWEEN ? AND ?"
        var changeArguments: [(any DatabaseValueConvertible)?] = [first, last]
        if let entity {
            changeSQL += " AND entity = ?"
            changeArguments.append(entity)
        }
        if let token, !token.isWhole, token.id == first {
            // Resumed inside a transaction: past the changes read before
            // (the index skips them; none is decoded).
            changeSQL +=
                " AND (txn > ? OR id > (SELECT id FROM depot_changes WHERE txn = ?"
                + (entity == nil ? "" : " AND entity = ?") + " ORDER BY id LIMIT 1 OFFSET ?))"
            changeArguments += [first, first]
            if let entity { changeArguments.append(entity) }
            changeArguments.append(token.change - 1)
        }
        var page = HistoryPage(heads: transactions, after: token, maxChanges: maxChanges)
        changeSQL += " ORDER BY txn, id"  // the txn index gives this order: no sort
        let cursor = try Row.fetchCursor(
            db.cachedStatement(sql: changeSQL), arguments: StatementArguments(changeArguments))
        var layouts: [Int64: [String]] = [:]
        while let row = try cursor.next() {
            let txn: Int64 = row[0]
            guard positions[txn] != nil else { continue }
            let change = try CompactValues.change(
                db, entity: row[1], identifier: row[2], kind: row[3], fields: row[4], tombstone: row[5], old: row[6],
                new: row[7], layout: row[8], layouts: &layouts)
            guard page.add(change, to: txn) else { break }
        }
        return page.result
    }
}
