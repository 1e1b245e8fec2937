import GRDB

/// The SQL of history consumers (`depot_consumers`).
enum ConsumerQuery {
    /// The token a consumer starting at `start` takes: it reads after it.
    static func token(_ db: Database, store: String, for start: Consumer.Start) throws -> Int64 {
        switch start {
        case .now:
            return try HistoryQuery.lastIssued(db)
        case .beginning:
            return try HistoryQuery.prunedThrough(db)
        case .after(let token):
            try HistoryQuery.check(db, store: store, after: token.id)
            return token.id
        }
    }

    /// The consumer called `name`, with its lag.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``.
    static func consumer(_ db: Database, store: String, name: String) throws -> Consumer {
        guard let consumer = try consumers(db, name: name).first else {
            let names = try String.fetchAll(db, sql: "SELECT name FROM depot_consumers ORDER BY name")
            throw HistoryErrors.unknownConsumer(store: store, name: name, names: names)
        }
        return consumer
    }

    /// Every consumer (or the one called `name`), by name, with its lag.
    static func consumers(_ db: Database, name: String? = nil) throws -> [Consumer] {
        var sql = """
            SELECT c.name, c.token, c.acknowledged_at, c.state,
                   (SELECT count(*) FROM depot_transactions t WHERE t.id > c.token),
                   coalesce((SELECT (julianday('now') - julianday(t.timestamp)) * 86400.0
                             FROM depot_transactions t WHERE t.id > c.token ORDER BY t.id LIMIT 1), 0)
            FROM depot_consumers c
            """
        var arguments: StatementArguments = []
        if let name {
            sql += " WHERE c.name = ?"
            arguments = [name]
        }
        sql += " ORDER BY c.name"
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
            Consumer(
                name: row[0], token: HistoryToken(row[1]), lagTransactions: row[4],
                lagSeconds: max(0, row[5]), acknowledgedAt: row[2],
                state: Consumer.State(rawValue: row[3]) ?? .active)
        }
    }

    /// Throws ``DepotError/Code/historyExpired`` naming a consumer that is lost.
    static func checkActive(_ consumer: Consumer, store: String) throws {
        guard consumer.state == .lost else { return }
        throw HistoryErrors.lost(consumer: consumer.name, store: store)
    }

    /// Marks `lost` the active consumers below `through` whose oldest
    /// unacknowledged transaction is older than `cutoff`.
    ///
    /// - Returns: their names.
    static func markLost(_ db: Database, below through: Int64, olderThan cutoff: String) throws -> [String] {
        let names = try String.fetchAll(
            db,
            sql: """
                SELECT c.name FROM depot_consumers c
                WHERE c.state = 'active' AND c.token < ?
                  AND (SELECT t.timestamp FROM depot_transactions t WHERE t.id > c.token ORDER BY t.id LIMIT 1) < ?
                ORDER BY c.name
                """, arguments: [through, cutoff])
        for name in names {
            try db.execute(sql: "UPDATE depot_consumers SET state = 'lost' WHERE name = ?", arguments: [name])
        }
        return names
    }

    /// The active consumer with the oldest token, if any.
    static func oldestActive(_ db: Database) throws -> (name: String, token: Int64)? {
        try Row.fetchOne(
            db,
            sql: "SELECT name, token FROM depot_consumers WHERE state = 'active' "
                + "ORDER BY token, name LIMIT 1"
        ).map { ($0[0], $0[1]) }
    }
}
