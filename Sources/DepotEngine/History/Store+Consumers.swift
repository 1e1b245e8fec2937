import GRDB

extension Store {
    /// Creates a consumer that reads the history from `start` on.
    ///
    /// For example:
    ///
    /// ```swift
    /// try await store.createConsumer("indexer", from: .beginning)
    /// for t in try await store.reader.history(consumer: "indexer") { index(t) }
    /// try await store.acknowledge(consumer: "indexer", token: lastIndexed)
    /// ```
    ///
    /// - Throws: ``DepotError/Code/conflict`` when the name is taken;
    ///   ``DepotError/Code/invalidArgument`` for a name that is not one;
    ///   ``DepotError/Code/invalidToken`` or ``DepotError/Code/historyExpired``
    ///   for a start token never issued or already pruned.
    @discardableResult
    public func createConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        try Self.checkConsumerName(name)
        let store = self.name
        return try await write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM depot_consumers WHERE name = ?", arguments: [name]) == true {
                throw HistoryErrors.consumerExists(store: store, name: name)
            }
            let token = try ConsumerQuery.token(db, store: store, for: start)
            let now = Timestamp.now()
            try db.execute(
                sql: "INSERT INTO depot_consumers(name, token, state, created, acknowledged_at) "
                    + "VALUES (?, ?, 'active', ?, ?)", arguments: [name, token, now, now])
            return try ConsumerQuery.consumer(db, store: store, name: name)
        }
    }

    /// Moves a consumer's cursor to `token`: it has processed every
    /// transaction up to it, which pruning may now remove. An older token
    /// than the consumer's is a no-op.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``;
    ///   ``DepotError/Code/invalidToken`` for a token never issued;
    ///   ``DepotError/Code/historyExpired`` for a consumer that is lost.
    @discardableResult
    public func acknowledge(consumer name: String, token: HistoryToken) async throws -> Consumer {
        try token.requireWhole(for: "an acknowledgement")
        let store = self.name
        return try await write { db in
            let consumer = try ConsumerQuery.consumer(db, store: store, name: name)
            try ConsumerQuery.checkActive(consumer, store: store)
            let issued = try HistoryQuery.lastIssued(db)
            guard token.id <= issued else {
                throw HistoryErrors.acknowledgedNeverIssued(store: store, token: token, issued: issued)
            }
            guard token > consumer.token else { return consumer }
            try db.execute(
                sql: "UPDATE depot_consumers SET token = ?, acknowledged_at = ? WHERE name = ?",
                arguments: [token.id, Timestamp.now(), name])
            return try ConsumerQuery.consumer(db, store: store, name: name)
        }
    }

    /// Starts a consumer again from `start` (backwards or forwards), and
    /// makes a lost consumer active.
    ///
    /// - Throws: as ``createConsumer(_:from:)``, and
    ///   ``DepotError/Code/unknownConsumer``.
    @discardableResult
    public func resetConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        let store = self.name
        return try await write { db in
            _ = try ConsumerQuery.consumer(db, store: store, name: name)
            let token = try ConsumerQuery.token(db, store: store, for: start)
            try db.execute(
                sql: "UPDATE depot_consumers SET token = ?, state = 'active', acknowledged_at = ? "
                    + "WHERE name = ?", arguments: [token, Timestamp.now(), name])
            return try ConsumerQuery.consumer(db, store: store, name: name)
        }
    }

    /// Drops a consumer; the history it held back may then be pruned.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``.
    public func dropConsumer(_ name: String) async throws {
        let store = self.name
        try await write { db in
            _ = try ConsumerQuery.consumer(db, store: store, name: name)
            try db.execute(sql: "DELETE FROM depot_consumers WHERE name = ?", arguments: [name])
        }
    }

    /// A consumer's name goes into URLs and metric labels: letters, digits,
    /// `.`, `_` and `-`, starting with a letter or digit, at most 128.
    package static func checkConsumerName(_ name: String) throws {
        let allowed = name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == 0x2E || b == 0x5F || b == 0x2D
        }
        guard allowed, let first = name.utf8.first, first != 0x2E, first != 0x5F, first != 0x2D,
            name.utf8.count <= 128
        else {
            throw DepotError(
                .invalidArgument,
                "\(JSONText.quoted(name)) is not a consumer name: use 1 to 128 "
                    + "letters, digits, '.', '_' or '-', starting with a letter or a digit")
        }
    }

    /// Runs `body` in a write transaction of its own, translating database errors.
    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(body)
        } catch {
            throw Store.translate(error, store: name)
        }
    }
}

extension StoreReader {
    /// Every consumer of the store, by name, with its lag.
    public func consumers() async throws -> [Consumer] {
        try await read { db in try ConsumerQuery.consumers(db) }
    }

    /// The consumer called `name`, with its lag.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``.
    public func consumer(_ name: String) async throws -> Consumer {
        let store = storeName
        return try await read { db in try ConsumerQuery.consumer(db, store: store, name: name) }
    }

    /// The transactions after consumer `name`'s token, oldest first; reading
    /// does not move the token (``Store/acknowledge(consumer:token:)`` does).
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``;
    ///   ``DepotError/Code/historyExpired`` naming a lost consumer.
    public func history(
        consumer name: String, entity: String? = nil, author: String? = nil,
        limit: Int = 100, maxChanges: Int = .max
    ) async throws -> [HistoryTransaction] {
        if let entity { _ = try schema.entity(entity) }
        guard limit > 0 else { throw DepotError(.invalidArgument, "limit must be at least 1") }
        let store = storeName
        return try await read { db in
            let consumer = try ConsumerQuery.consumer(db, store: store, name: name)
            try ConsumerQuery.checkActive(consumer, store: store)
            return try HistoryQuery.transactions(
                db, store: store, after: consumer.token, entity: entity,
                author: author, limit: limit, maxChanges: maxChanges)
        }
    }
}
