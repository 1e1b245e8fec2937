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

    /// The token a consumer starting at `start` takes.
    private nonisolated func token(_ connection: PostgresConnection, for start: Consumer.Start) async throws -> Int64 {
        switch start {
        case .now: return try await lastIssued(connection)
        case .beginning: return try await prunedThrough(connection)
        case .after(let token):
            try await checkHistory(connection, after: token.id)
            return token.id
        }
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

    /// Creates a consumer that reads the history from `start` on.
    @discardableResult
    public nonisolated func createConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        try Store.checkConsumerName(name)
        let store = self.name
        return try await historyTransaction { connection in
            let token = try await token(connection, for: start)
            var binds = PostgresBindings()
            binds.append(name)
            binds.append(token)
            binds.append(Timestamp.now())
            let inserted = try await PostgresSQL.textRows(
                connection,
                "INSERT INTO \(table("depot_consumers"))"
                    + "(name, token, state, created, acknowledged_at) VALUES ($1, $2, 'active', $3, $3) "
                    + "ON CONFLICT (name) DO NOTHING RETURNING name", binds, logger: logger)
            guard !inserted.isEmpty else { throw HistoryErrors.consumerExists(store: store, name: name) }
            return try await consumer(connection, name: name)
        }
    }

    /// Moves a consumer's token forward; an older token is a no-op.
    @discardableResult
    public nonisolated func acknowledge(consumer name: String, token: HistoryToken) async throws -> Consumer {
        try token.requireWhole(for: "an acknowledgement")
        let store = self.name
        return try await historyTransaction { connection in
            let consumer = try await consumer(connection, name: name)
            if consumer.state == .lost { throw HistoryErrors.lost(consumer: name, store: store) }
            let issued = try await lastIssued(connection)
            guard token.id <= issued else {
                throw HistoryErrors.acknowledgedNeverIssued(store: store, token: token, issued: issued)
            }
            guard token > consumer.token else { return consumer }
            var binds = PostgresBindings()
            binds.append(token.id)
            binds.append(Timestamp.now())
            binds.append(name)
            try await PostgresSQL.execute(
                connection,
                "UPDATE \(table("depot_consumers")) SET token = $1, "
                    + "acknowledged_at = $2 WHERE name = $3", binds, logger: logger)
            return try await self.consumer(connection, name: name)
        }
    }

    /// Starts a consumer again from `start`, and makes a lost one active.
    @discardableResult
    public nonisolated func resetConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        try await historyTransaction { connection in
            _ = try await consumer(connection, name: name)
            var binds = PostgresBindings()
            binds.append(try await token(connection, for: start))
            binds.append(Timestamp.now())
            binds.append(name)
            try await PostgresSQL.execute(
                connection,
                "UPDATE \(table("depot_consumers")) SET token = $1, "
                    + "state = 'active', acknowledged_at = $2 WHERE name = $3", binds, logger: logger)
            return try await consumer(connection, name: name)
        }
    }

    /// Drops a consumer; the history it held back may then be pruned.
    public nonisolated func dropConsumer(_ name: String) async throws {
        try await historyTransaction { connection in
            _ = try await consumer(connection, name: name)
            var binds = PostgresBindings()
            binds.append(name)
            try await PostgresSQL.execute(
                connection, "DELETE FROM \(table("depot_consumers")) WHERE name = $1", binds,
                logger: logger)
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

    // MARK: - Pruning

    /// Deletes the history transactions before `token` (keeping its own).
    @discardableResult
    public nonisolated func pruneHistory(before token: HistoryToken) async throws -> PruneOutcome {
        try token.requireWhole(for: "a prune")
        let store = name
        return try await prune { connection in
            let issued = try await self.lastIssued(connection)
            guard token.id <= issued + 1 else {
                throw HistoryErrors.pruneNeverIssued(store: store, token: token, issued: issued)
            }
            return token.id - 1
        }
    }

    /// Deletes the history transactions committed more than `age` ago.
    @discardableResult
    public nonisolated func pruneHistory(olderThan age: Duration) async throws -> PruneOutcome {
        let cutoff = Timestamp.ago(age)
        let sql = "SELECT coalesce(max(id), 0)::text FROM \(table("depot_transactions")) WHERE timestamp < $1"
        return try await prune { connection in
            var binds = PostgresBindings()
            binds.append(cutoff)
            return PostgresSQL.scalar(try await PostgresSQL.textRows(connection, sql, binds, logger: self.logger))
                .flatMap { Int64($0) } ?? 0
        }
    }

    /// Prunes by the configured retention, if there is one.
    @discardableResult
    public nonisolated func applyHistoryRetention() async throws -> PruneOutcome {
        guard let retention = configuration.historyRetention else { return PruneOutcome() }
        return try await pruneHistory(olderThan: retention)
    }

    /// Deletes every transaction up to the id `through` returns, but none an
    /// active consumer has not acknowledged, in steps of about
    /// `historyPruneStep` changes, each in a transaction of its own that
    /// moves `history_pruned_through` (as an SQLite store prunes).
    private nonisolated func prune(through: @escaping @Sendable (PostgresConnection) async throws -> Int64) async throws
        -> PruneOutcome
    {
        let cutoff = configuration.historyMaxRetention.map(Timestamp.ago)
        let step = Int64(max(1, configuration.historyPruneStep))
        let (consumersTable, transactions, changes, meta) =
            (table("depot_consumers"), table("depot_transactions"), table("depot_changes"), table("depot_meta"))
        var (outcome, target) = try await historyTransaction { connection -> (PruneOutcome, Int64) in
            let target = try await through(connection)
            var outcome = PruneOutcome()
            if let cutoff, target > (try await prunedThrough(connection)) {
                var binds = PostgresBindings()
                binds.append(target)
                binds.append(cutoff)
                outcome.lost = try await PostgresSQL.textRows(
                    connection,
                    "UPDATE \(consumersTable) c SET state = 'lost' "
                        + "WHERE c.state = 'active' AND c.token < $1 AND (SELECT t.timestamp FROM \(transactions) t "
                        + "WHERE t.id > c.token ORDER BY t.id LIMIT 1) < $2 RETURNING c.name", binds, logger: logger
                )
                .compactMap { $0[0] }.sorted()
            }
            return (outcome, target)
        }
        while true {
            let frozenTarget = target
            let (deleted, holder) = try await historyTransaction { connection -> (Int?, PruneOutcome.HeldBack?) in
                var last = frozenTarget
                var heldBack: PruneOutcome.HeldBack?
                let oldest = try await PostgresSQL.textRows(
                    connection,
                    "SELECT name, token::text AS \"\u{1}\" FROM \(consumersTable) "
                        + "WHERE state = 'active' ORDER BY token, name COLLATE \"C\" LIMIT 1", logger: logger
                ).first
                if let oldest, let name = oldest[0], let token = oldest[1].flatMap({ Int64($0) }), token < last {
                    last = token
                    heldBack = PruneOutcome.HeldBack(consumer: name, token: HistoryToken(token))
                }
                let already = try await prunedThrough(connection)
                guard last > already else { return (nil, heldBack) }
                var binds = PostgresBindings()
                binds.append(already)
                binds.append(step - 1)
                binds.append(step)
                // The transaction of the step's last change, a row holding
                // `span` changes (a run of new records) counted as many.
                // Each transaction has a change at least, so the next `step`
                // transactions hold it, if any: the scan reads no further.
                // When they hold fewer changes (ids a failed save took), the
                // step ends after them.
                let boundary = PostgresSQL.scalar(
                    try await PostgresSQL.textRows(
                        connection,
                        "SELECT txn::text AS \"\u{1}\" FROM "
                            + "(SELECT txn, sum(coalesce(span, 1)) OVER (ORDER BY txn, id) AS n FROM \(changes) "
                            + "WHERE txn > $1 AND txn <= $1 + $3) c WHERE n > $2 ORDER BY txn LIMIT 1", binds,
                        logger: logger)
                )
                .flatMap { Int64($0) }
                let upTo = min(last, boundary ?? (already + step))
                var range = PostgresBindings()
                range.append(already)
                range.append(upTo)
                try await PostgresSQL.execute(
                    connection, "DELETE FROM \(changes) WHERE txn > $1 AND txn <= $2", range,
                    logger: logger)
                let gone = try await PostgresSQL.textRows(
                    connection,
                    "WITH gone AS (DELETE FROM \(transactions) "
                        + "WHERE id > $1 AND id <= $2 RETURNING 1) SELECT count(*)::text FROM gone", range,
                    logger: logger)
                var mark = PostgresBindings()
                mark.append(String(upTo))
                try await PostgresSQL.execute(
                    connection,
                    "INSERT INTO \(meta)(key, value) VALUES "
                        + "('history_pruned_through', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value", mark,
                    logger: logger)
                return (PostgresSQL.scalar(gone).flatMap { Int($0) } ?? 0, heldBack)
            }
            if let holder { outcome.heldBackBy = holder; target = min(target, holder.token.id) }
            guard let deleted else { break }
            outcome.deleted += deleted
            outcome.saves += 1
        }
        return outcome
    }
}
