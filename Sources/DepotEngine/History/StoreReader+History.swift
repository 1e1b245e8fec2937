import GRDB

extension StoreReader {
    /// The transactions after `token`, oldest first.
    ///
    /// - Parameters:
    ///   - token: the last token the client saw; `nil` starts at the oldest kept transaction.
    ///   - entity: only changes of this entity, and only transactions that have some.
    ///   - author: only transactions by this author.
    ///   - limit: at most this many transactions.
    /// - Throws: ``DepotError/Code/historyExpired`` when transactions after
    ///   `token` were pruned (the client missed changes and must start over);
    ///   ``DepotError/Code/invalidToken`` for a token the store never issued;
    ///   ``DepotError/Code/unknownEntity``.
    public func history(after token: HistoryToken? = nil, entity: String? = nil, author: String? = nil,
                        limit: Int = 100) async throws -> [HistoryTransaction] {
        if let entity { _ = try schema.entity(entity) }
        guard limit > 0 else { throw DepotError(.invalidArgument, "limit must be at least 1") }
        let storeName = schema.name
        return try await read { db in
            try HistoryQuery.transactions(db, store: storeName, after: token, entity: entity,
                                          author: author, limit: limit)
        }
    }

    /// The token of the newest transaction, or `nil` when the history is empty.
    public func latestToken() async throws -> HistoryToken? {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT max(id) FROM depot_transactions").map(HistoryToken.init)
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
    public func followHistory(after token: HistoryToken? = nil, entity: String? = nil,
                              author: String? = nil) -> HistoryFollower {
        HistoryFollower(reader: self, after: token, entity: entity, author: author)
    }
}

/// The history of a store as it grows: an `AsyncSequence` of transactions.
public struct HistoryFollower: AsyncSequence, Sendable {
    /// A transaction.
    public typealias Element = HistoryTransaction

    let reader: StoreReader
    let after: HistoryToken?
    let entity: String?
    let author: String?

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(follower: self, last: after)
    }

    /// Fetches pages of transactions and waits for commits between them.
    public struct Iterator: AsyncIteratorProtocol {
        let follower: HistoryFollower
        var last: HistoryToken?
        var buffer: [HistoryTransaction] = []

        /// The next transaction, waiting for one to commit; `nil` when the
        /// store closed or the task was cancelled.
        public mutating func next() async throws -> HistoryTransaction? {
            while buffer.isEmpty {
                if Task.isCancelled || follower.reader.signal.isClosed { return nil }
                let version = follower.reader.signal.version
                let page: [HistoryTransaction]
                do {
                    page = try await follower.reader.history(after: last, entity: follower.entity,
                                                             author: follower.author, limit: 100)
                } catch where follower.reader.signal.isClosed {
                    return nil  // the store closed under the read
                }
                if let newest = page.last {
                    buffer = page.reversed()
                    last = newest.token
                    break
                }
                guard await follower.reader.signal.wait(after: version) else { return nil }
            }
            return buffer.popLast()
        }
    }
}

/// The SQL of history reads and pruning.
enum HistoryQuery {
    static func prunedThrough(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT value FROM depot_meta WHERE key = 'history_pruned_through'") ?? 0
    }

    static func lastIssued(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'depot_transactions'") ?? 0
    }

    static func transactions(_ db: Database, store: String, after token: HistoryToken?, entity: String?,
                             author: String?, limit: Int) throws -> [HistoryTransaction] {
        let after = token?.id ?? 0
        if token != nil {
            let pruned = try prunedThrough(db)
            if after < pruned {
                throw DepotError(.historyExpired, "the history of store \(JSONText.quoted(store)) after token "
                    + "\(after) was pruned (the transactions up to token \(pruned) are gone); read the current records again and "
                    + "follow the history from its latest token")
            }
            let issued = try lastIssued(db)
            if after > issued {
                throw DepotError(.invalidToken, "store \(JSONText.quoted(store)) never issued token \(after) "
                    + "(its latest is \(issued)); was the token taken from another store?")
            }
        }
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
        for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)) {
            let id: Int64 = row[0]
            positions[id] = transactions.count
            transactions.append(HistoryTransaction(token: HistoryToken(id), timestamp: row[1], author: row[2],
                                                   job: row[3], changes: []))
        }
        guard let first = transactions.first?.token.id, let last = transactions.last?.token.id else { return [] }
        var changeSQL = "SELECT txn, entity, identifier, kind, fields, tombstone FROM depot_changes "
            + "WHERE txn BETWEEN ? AND ?"
        var changeArguments: [(any DatabaseValueConvertible)?] = [first, last]
        if let entity {
            changeSQL += " AND entity = ?"
            changeArguments.append(entity)
        }
        changeSQL += " ORDER BY id"
        let cursor = try Row.fetchCursor(db, sql: changeSQL, arguments: StatementArguments(changeArguments))
        while let row = try cursor.next() {
            let txn: Int64 = row[0]
            guard let p = positions[txn] else { continue }
            let fieldsText: String? = row[4]
            var fields: [String]? = nil
            if let fieldsText, case .array(let names)? = MiniJSON.parse(fieldsText) {
                fields = names.compactMap { if case .string(let s) = $0 { s } else { nil } }
            }
            transactions[p].changes.append(HistoryChange(
                entity: row[1], identifier: row[2], kind: ChangeKind(rawValue: row[3]) ?? .update,
                fields: fields, tombstone: row[5]))
        }
        return transactions
    }
}
