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
        try SQLiteSession.rows(db, ConsumerStatements.consumers(named: name)).map(ConsumerStatements.consumer)
    }

    /// Throws ``DepotError/Code/historyExpired`` naming a consumer that is lost.
    static func checkActive(_ consumer: Consumer, store: String) throws {
        guard consumer.state == .lost else { return }
        throw HistoryErrors.lost(consumer: consumer.name, store: store)
    }
}
