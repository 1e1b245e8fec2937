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
/// let page = try await store.history(consumer: "indexer", limit: 100)
/// if let last = page.last { try await store.acknowledge(consumer: "indexer", token: last.token) }
/// ```
extension PostgresStore {
    /// Takes the store's history lock until the end of the transaction.
    nonisolated func lockHistory(_ connection: PostgresConnection) async throws {
        try await PostgresSQL.lock(connection, "depot-history:" + configuration.location.schema, logger: logger)
    }

    /// Where the kept history starts: transactions up to it were pruned.
    nonisolated func prunedThrough(_ connection: PostgresConnection) async throws -> Int64 {
        let sql = "SELECT value FROM \(table("depot_meta")) WHERE key = 'history_pruned_through'"
        return PostgresSQL.scalar(try await PostgresSQL.textRows(connection, sql, logger: logger)).flatMap { Int64($0) }
            ?? 0
    }

    /// The last token the store issued (its transactions' sequence), 0 for none.
    nonisolated func lastIssued(_ connection: PostgresConnection) async throws -> Int64 {
        var binds = PostgresBindings()
        binds.append(configuration.location.schema)
        let sql =
            "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence("
            + "quote_ident($1) || '.depot_transactions', 'id')), 0)::text"
        return PostgresSQL.scalar(try await PostgresSQL.textRows(connection, sql, binds, logger: logger))
            .flatMap { Int64($0) } ?? 0
    }

    /// Throws when the history after `after` cannot be read whole: expired
    /// when some of it was pruned, an invalid token when never issued.
    nonisolated func checkHistory(_ connection: PostgresConnection, after: Int64) async throws {
        let pruned = try await prunedThrough(connection)
        if after < pruned { throw HistoryErrors.expired(store: name, after: after, pruned: pruned) }
        let issued = try await lastIssued(connection)
        if after > issued { throw HistoryErrors.neverIssued(store: name, token: after, issued: issued) }
    }

    // MARK: - Consumers

    /// Every consumer (or the one called `name`), by name, with its lag.
    nonisolated func consumers(_ connection: PostgresConnection, name: String? = nil) async throws -> [Consumer] {
        let transactions = table("depot_transactions")
        var sql =
            "SELECT c.name, c.token::text, c.acknowledged_at, c.state, "
            + "(SELECT count(*) FROM \(transactions) t WHERE t.id > c.token)::text, "
            + "coalesce((SELECT extract(epoch FROM clock_timestamp() - t.timestamp::timestamptz) FROM \(transactions) t "
            + "WHERE t.id > c.token ORDER BY t.id LIMIT 1), 0)::text FROM \(table("depot_consumers")) c"
        var binds = PostgresBindings()
        if let name {
            binds.append(name)
            sql += " WHERE c.name = $1"
        }
        sql += " ORDER BY c.name COLLATE \"C\""
        return try await PostgresSQL.textRows(connection, sql, binds, logger: logger).map { row in
            Consumer(
                name: row[0] ?? "", token: HistoryToken(row[1].flatMap { Int64($0) } ?? 0),
                lagTransactions: row[4].flatMap { Int($0) } ?? 0,
                lagSeconds: max(0, row[5].flatMap { Double($0) } ?? 0), acknowledgedAt: row[2] ?? "",
                state: row[3].flatMap(Consumer.State.init(rawValue:)) ?? .active)
        }
    }

    /// The consumer called `name`, or ``DepotError/Code/unknownConsumer``.
    nonisolated func consumer(_ connection: PostgresConnection, name: String) async throws -> Consumer {
        if let consumer = try await consumers(connection, name: name).first { return consumer }
        let names = try await PostgresSQL.textRows(
            connection, "SELECT name FROM \(table("depot_consumers")) ORDER BY name",
            logger: logger
        ).compactMap { $0[0] }
        throw HistoryErrors.unknownConsumer(store: self.name, name: name, names: names)
    }

    /// Every consumer of the store, by name, with its lag.
    public nonisolated func consumers() async throws -> [Consumer] {
        try await read { connection in try await consumers(connection) }
    }

    /// The consumer called `name`, with its lag.
    public nonisolated func consumer(_ name: String) async throws -> Consumer {
        try await read { connection in try await consumer(connection, name: name) }
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

    public nonisolated func withHistory<T: Sendable>(_ body: @Sendable (PostgresHistoryContext) async throws -> T)
        async throws -> T
    {
        try await historyTransaction { connection in
            let context = PostgresHistoryContext(store: self, connection: connection)
            defer { context.end() }
            return try await body(context)
        }
    }

    /// The transactions after consumer `name`'s token, oldest first.
    public nonisolated func history(
        consumer name: String, entity: String? = nil, author: String? = nil,
        limit: Int = 100, maxChanges: Int = .max
    ) async throws -> [HistoryTransaction] {
        let consumer = try await self.consumer(name)
        if consumer.state == .lost { throw HistoryErrors.lost(consumer: name, store: self.name) }
        return try await history(
            after: consumer.token, entity: entity, author: author, limit: limit,
            maxChanges: maxChanges)
    }
}

/// The history's bookkeeping of a PostgreSQL store, in a transaction that
/// holds the store's history lock.
// @unchecked: used by the one task that runs its transaction; its connection is dropped when that ends.
public final class PostgresHistoryContext: HistoryContext, @unchecked Sendable {
    private let store: PostgresStore
    // Set until the transaction ends: a context kept past it must not run statements outside it.
    private var pinned: PostgresConnection?

    init(store: PostgresStore, connection: PostgresConnection) {
        self.store = store
        self.pinned = connection
    }

    func end() { pinned = nil }

    private var connection: PostgresConnection {
        get throws {
            guard let pinned else {
                throw DepotError(.database, "the history's transaction is over; nothing of this change was kept")
            }
            return pinned
        }
    }

    private func rows(_ sql: String, _ values: [Value] = []) async throws -> [[String?]] {
        try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings(values), logger: store.logger)
    }

    public func lastIssued() async throws -> Int64 { try await store.lastIssued(connection) }
    public func prunedThrough() async throws -> Int64 { try await store.prunedThrough(connection) }
    public func checkAfter(_ id: Int64) async throws { try await store.checkHistory(connection, after: id) }

    public func lastTransaction(before timestamp: String) async throws -> Int64 {
        PostgresSQL.scalar(
            try await rows(
                "SELECT coalesce(max(id), 0)::text FROM \(store.table("depot_transactions")) WHERE timestamp < $1",
                [.string(timestamp)])
        ).flatMap { Int64($0) } ?? 0
    }

    public func markLost(below token: Int64, committedBefore cutoff: String) async throws -> [String] {
        try await rows(
            "UPDATE \(store.table("depot_consumers")) c SET state = 'lost' "
                + "WHERE c.state = 'active' AND c.token < $1 AND (SELECT t.timestamp FROM "
                + "\(store.table("depot_transactions")) t WHERE t.id > c.token ORDER BY t.id LIMIT 1) < $2 "
                + "RETURNING c.name", [.int(token), .string(cutoff)]
        ).compactMap { $0[0] }.sorted()
    }

    public func oldestActive() async throws -> (name: String, token: Int64)? {
        guard
            let oldest = try await rows(
                "SELECT name, token::text\(PostgresSQL.textAlias) FROM \(store.table("depot_consumers")) "
                    + "WHERE state = 'active' ORDER BY token, name COLLATE \"C\" LIMIT 1"
            ).first, let name = oldest[0], let token = oldest[1].flatMap({ Int64($0) })
        else { return nil }
        return (name, token)
    }

    /// The transaction of the step's last change, a row holding `span`
    /// changes (a run of new records) counted as many. Each transaction has
    /// a change at least, so the next `changes` transactions hold it, if
    /// any: the scan reads no further. When they hold fewer changes (ids a
    /// failed save took), the step ends after them.
    public func stepEnd(after: Int64, changes: Int) async throws -> Int64 {
        let step = Int64(changes)
        let boundary = PostgresSQL.scalar(
            try await rows(
                "SELECT txn::text\(PostgresSQL.textAlias) FROM (SELECT txn, sum(coalesce(span, 1)) OVER (ORDER BY txn, id) AS n FROM "
                    + "\(store.table("depot_changes")) WHERE txn > $1 AND txn <= $1 + $3) c WHERE n > $2 "
                    + "ORDER BY txn LIMIT 1", [.int(after), .int(step - 1), .int(step)])
        ).flatMap { Int64($0) }
        return boundary ?? after + step
    }

    public func deleteHistory(after: Int64, through: Int64) async throws -> Int {
        _ = try await rows(
            "DELETE FROM \(store.table("depot_changes")) WHERE txn > $1 AND txn <= $2", [.int(after), .int(through)])
        let gone = try await rows(
            "WITH gone AS (DELETE FROM \(store.table("depot_transactions")) WHERE id > $1 AND id <= $2 RETURNING 1) "
                + "SELECT count(*)::text FROM gone", [.int(after), .int(through)])
        _ = try await rows(
            "INSERT INTO \(store.table("depot_meta"))(key, value) VALUES ('history_pruned_through', $1) "
                + "ON CONFLICT (key) DO UPDATE SET value = excluded.value", [.string(String(through))])
        return PostgresSQL.scalar(gone).flatMap { Int($0) } ?? 0
    }

    public func consumer(_ name: String) async throws -> Consumer { try await store.consumer(connection, name: name) }

    public func insertConsumer(_ name: String, token: Int64, at time: String) async throws -> Bool {
        !(try await rows(
            "INSERT INTO \(store.table("depot_consumers"))(name, token, state, created, acknowledged_at) "
                + "VALUES ($1, $2, 'active', $3, $3) ON CONFLICT (name) DO NOTHING RETURNING name",
            [.string(name), .int(token), .string(time)])).isEmpty
    }

    public func moveConsumer(_ name: String, token: Int64, activate: Bool, at time: String) async throws {
        _ = try await rows(
            "UPDATE \(store.table("depot_consumers")) SET token = $1, acknowledged_at = $2"
                + (activate ? ", state = 'active'" : "") + " WHERE name = $3",
            [.int(token), .string(time), .string(name)])
    }

    public func deleteConsumer(_ name: String) async throws {
        _ = try await rows("DELETE FROM \(store.table("depot_consumers")) WHERE name = $1", [.string(name)])
    }
}
