import GRDB

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

extension Consumer {
    /// A consumer's name goes into URLs and metric labels: letters, digits,
    /// `.`, `_` and `-`, starting with a letter or digit, at most 128.
    package static func checkName(_ name: String) throws {
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
}
