public import DepotEngine
import PostgresNIO

/// History consumers and pruning on a PostgreSQL store (DESIGN §11), with
/// an SQLite store's rules and messages (``HistoryErrors``): tokens never
/// issued or already pruned are refused, pruning stops at the oldest active
/// consumer, and `history_max_retention` marks lost the consumers that
/// would hold it back longer.
///
/// Consumer changes and prune steps take the store's history lock (an
/// advisory lock of their transaction), so that a consumer made at the
/// beginning while another host prunes starts where the prune ended.
///
/// ```swift
/// try await store.createConsumer("indexer", from: .beginning)
/// let page = try await store.reads.history(consumer: "indexer", limit: 100)
/// if let last = page.last { try await store.acknowledge(consumer: "indexer", token: last.token) }
/// ```
extension PostgresStore {
    /// Where a point-in-time recovery of the store's PostgreSQL cluster
    /// stops to bring the store back to `token` (DESIGN §20): the
    /// PostgreSQL transaction that committed it, and the last token of that
    /// commit (the saves of one commit group share one; a recovery cannot
    /// stop inside it).
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` for a token the store
    ///   never issued; ``DepotError/Code/historyExpired`` for one pruned;
    ///   ``DepotError/Code/invalidArgument`` for a transaction written
    ///   before the store kept transaction ids (system version 5).
    public nonisolated func recoveryTarget(token: Int64) async throws -> (xid: Int64, lastToken: Int64) {
        let table = table("depot_transactions")
        return try await read { connection in
            var binds = PostgresBindings()
            binds.append(token)
            let row = try await PostgresSQL.textRows(
                connection,
                "SELECT t.xid::text, (SELECT max(o.id) FROM \(table) o WHERE o.xid = t.xid)::text "
                    + "FROM \(table) t WHERE t.id = $1", binds, logger: logger
            ).first
            guard let row else {
                // Never issued, or pruned: the history's own words for each.
                try await checkHistory(connection, after: token)
                throw DepotError(
                    .historyExpired,
                    "token \(token) of store \(JSONText.quoted(name)) is no longer in its history; "
                        + "a recovery to it cannot be named")
            }
            guard let xid = row[0].flatMap({ Int64($0) }), let last = row[1].flatMap({ Int64($0) }) else {
                throw DepotError(
                    .invalidArgument,
                    "token \(token) of store \(JSONText.quoted(name)) was written before the store kept "
                        + "PostgreSQL's transaction ids (Depot's system version 5); recover to a time instead "
                        + "(recovery_target_time, from the token's timestamp in the history)")
            }
            return (xid, last)
        }
    }

    /// Takes the store's history lock until the end of the transaction.
    nonisolated func lockHistory(_ connection: PostgresConnection) async throws {
        try await PostgresSQL.lock(connection, "depot-history:" + configuration.location.schema, logger: logger)
    }

    /// Where the kept history starts: transactions up to it were pruned.
    nonisolated func prunedThrough(_ connection: PostgresConnection) async throws -> Int64 {
        try await PostgresSession(store: self, connection: connection).prunedThrough()
    }

    /// The last token the store issued (its transactions' sequence), 0 for none.
    nonisolated func lastIssued(_ connection: PostgresConnection) async throws -> Int64 {
        try await PostgresSession(store: self, connection: connection).lastIssued()
    }

    /// Throws when the history after `after` cannot be read whole: expired
    /// when some of it was pruned, an invalid token when never issued.
    nonisolated func checkHistory(_ connection: PostgresConnection, after: Int64) async throws {
        try await PostgresSession(store: self, connection: connection).checkAfter(after, store: name)
    }

    /// Runs `body` in a transaction holding the history lock, translating errors.
    private nonisolated func historyTransaction<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        do {
            return try await transaction { connection in
                try await lockHistory(connection)
                return try await body(connection)
            }
        } catch {
            throw translate(error)
        }
    }

    package nonisolated func withHistory<T: Sendable>(_ body: @Sendable (PostgresSession) async throws -> T)
        async throws -> T
    {
        try await historyTransaction { connection in
            let session = PostgresSession(store: self, connection: connection)
            defer { session.end() }
            return try await body(session)
        }
    }
}
