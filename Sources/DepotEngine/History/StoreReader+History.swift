import GRDB

extension StoreReader {
    /// The transactions after `token`, oldest first (``StoreReading/history(after:entity:author:limit:maxChanges:live:)``);
    /// a follower's read after a commit (`live`) shares its snapshot with
    /// the other streams woken by it (``LiveReads``).
    package func history(
        after token: HistoryToken?, entity: String?, author: String?, limit: Int, maxChanges: Int, live: Bool
    ) async throws -> [HistoryTransaction] {
        if let entity { _ = try schema.entity(entity) }
        guard limit > 0 else { throw DepotError(.invalidArgument, "limit must be at least 1") }
        let storeName = schema.name
        let read: @Sendable (Database) throws -> [HistoryTransaction] = { db in
            try HistoryQuery.transactions(
                db, store: storeName, after: token, entity: entity, author: author, limit: limit,
                maxChanges: maxChanges)
        }
        return try await live ? liveRead(read) : self.read(read)
    }
}
