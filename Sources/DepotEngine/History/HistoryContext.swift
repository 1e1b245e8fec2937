import DepotWire

/// The history's bookkeeping in one transaction of a store
/// (``StoreBackend/withHistory(_:)``): the statements that pruning and the
/// consumers are made of, written once over the transaction's SQL
/// (``SQLSession``). What they decide (how far a prune goes, who holds it
/// back, who is lost, what a consumer may acknowledge) is written once,
/// below.
package struct HistoryContext: Sendable {
    let sql: any SQLSession
    /// The store's name, for the errors.
    let store: String

    /// The id of the last history transaction the store issued (0 when none).
    func lastIssued() async throws -> Int64 { try await sql.lastIssued() }

    /// The id through which the history was pruned (0 when never).
    func prunedThrough() async throws -> Int64 { try await sql.prunedThrough() }

    /// Checks that history after `id` can be read: issued, and not pruned.
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` or ``DepotError/Code/historyExpired``.
    func checkAfter(_ id: Int64) async throws { try await sql.checkAfter(id, store: store) }

    /// The id of the last transaction committed before `timestamp` (0 when none).
    func lastTransaction(before timestamp: String) async throws -> Int64 {
        try await sql.scalar(
            "SELECT max(id) FROM \(table: "depot_transactions") WHERE timestamp < \(bind: timestamp)")?.integer ?? 0
    }

    /// Marks lost the active consumers whose token is below `token` and
    /// whose oldest unread transaction was committed before `cutoff`.
    ///
    /// - Returns: their names, sorted.
    func markLost(below token: Int64, committedBefore cutoff: String) async throws -> [String] {
        try await sql.rows(
            """
            UPDATE \(table: "depot_consumers") SET state = \(bind: Consumer.State.lost.rawValue) \
            WHERE state = \(bind: Consumer.State.active.rawValue) AND token < \(bind: token) \
            AND (SELECT t.timestamp FROM \(table: "depot_transactions") t \
            WHERE t.id > \(table: "depot_consumers").token ORDER BY t.id LIMIT 1) < \(bind: cutoff) RETURNING name
            """
        ).compactMap { $0[0].text }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The active consumer with the oldest token (by name among equals).
    func oldestActive() async throws -> (name: String, token: Int64)? {
        guard
            let row = try await sql.rows(
                """
                SELECT name, token FROM \(table: "depot_consumers") \
                WHERE state = \(bind: Consumer.State.active.rawValue) ORDER BY token, \(byteOrder: "name") LIMIT 1
                """
            ).first, let name = row[0].text, let token = row[1].integer
        else { return nil }
        return (name, token)
    }

    /// The last transaction of a prune step of about `changes` changes
    /// after transaction `after`, a change standing for a run of new
    /// records counting as many (``SQLDialect/changeWeight``). Each
    /// transaction has a change at least, and each row counts one at
    /// least, so the next `changes` transactions, and their first `changes`
    /// rows in the order of the changes' key (an index: SQLite's `txn`
    /// with the rowid, PostgreSQL's primary key), hold the step, if any:
    /// the scan reads no further (a window over every change of those
    /// transactions took 0.96 s against 0.03 s on 2M changes in 10 saves).
    /// When they hold fewer changes (ids a failed save took), the step
    /// ends after them.
    func stepEnd(after: Int64, changes: Int) async throws -> Int64 {
        let step = Int64(max(1, changes))
        let boundary = try await sql.scalar(
            """
            SELECT txn FROM (SELECT txn, sum(w) OVER (ORDER BY txn, id) AS n \
            FROM (SELECT txn, id, \(changeWeight: ()) AS w FROM \(table: "depot_changes") \
            WHERE txn > \(bind: after) AND txn <= \(bind: after + step) ORDER BY txn, id LIMIT \(bind: step)) r) c \
            WHERE n > \(bind: step - 1) ORDER BY txn LIMIT 1
            """)?.integer
        return boundary ?? after + step
    }

    /// Deletes the transactions after `after` through `through` and their
    /// changes, and records `through` as pruned.
    ///
    /// - Returns: how many transactions it deleted.
    func deleteHistory(after: Int64, through: Int64) async throws -> Int {
        let transactions = "depot_transactions"
        let deleted =
            try await sql.scalar(
                "SELECT count(*) FROM \(table: transactions) WHERE id > \(bind: after) AND id <= \(bind: through)")?
            .integer ?? 0
        try await sql.execute(
            "DELETE FROM \(table: "depot_changes") WHERE txn > \(bind: after) AND txn <= \(bind: through)")
        try await sql.execute(
            "DELETE FROM \(table: transactions) WHERE id > \(bind: after) AND id <= \(bind: through)")
        try await sql.execute(
            """
            INSERT INTO \(table: "depot_meta")(key, value) VALUES ('history_pruned_through', \(meta: .int(through))) \
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """)
        return Int(deleted)
    }

    /// The consumer called `name`, with its lag.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``, naming the others.
    func consumer(_ name: String) async throws -> Consumer { try await sql.consumer(name, store: store) }

    /// Creates a consumer at `token`, active, acknowledged at `time`;
    /// false when the name is taken.
    func insertConsumer(_ name: String, token: Int64, at time: String) async throws -> Bool {
        !(try await sql.rows(
            """
            INSERT INTO \(table: "depot_consumers")(name, token, state, created, acknowledged_at) \
            VALUES (\(bind: name), \(bind: token), \(bind: Consumer.State.active.rawValue), \(bind: time), \
            \(bind: time)) ON CONFLICT (name) DO NOTHING RETURNING name
            """)).isEmpty
    }

    /// Moves a consumer to `token`, acknowledged at `time`; also makes it
    /// active when `activate`.
    func moveConsumer(_ name: String, token: Int64, activate: Bool, at time: String) async throws {
        let state: SQLStatement = activate ? ", state = \(bind: Consumer.State.active.rawValue)" : ""
        try await sql.execute(
            "UPDATE \(table: "depot_consumers") SET token = \(bind: token), acknowledged_at = \(bind: time)" + state
                + " WHERE name = \(bind: name)")
    }

    /// Removes a consumer.
    func deleteConsumer(_ name: String) async throws {
        try await sql.execute("DELETE FROM \(table: "depot_consumers") WHERE name = \(bind: name)")
    }

    /// The token a consumer starting at `start` takes: it reads after it.
    func token(for start: Consumer.Start) async throws -> Int64 {
        switch start {
        case .now: return try await lastIssued()
        case .beginning: return try await prunedThrough()
        case .after(let token):
            try await checkAfter(token.id)
            return token.id
        }
    }
}

/// The statements of the history's bookkeeping that reads use too, on
/// any connection of a store.
extension SQLSession {
    /// The id of the last history transaction the store issued (0 when none).
    package func lastIssued() async throws -> Int64 {
        try await scalar("SELECT \(lastTransactionID: "depot_transactions")")?.integer ?? 0
    }

    /// The id through which the history was pruned (0 when never).
    package func prunedThrough() async throws -> Int64 {
        try await scalar("SELECT value FROM \(table: "depot_meta") WHERE key = 'history_pruned_through'")?.integer
            ?? 0
    }

    /// Checks that history after `id` can be read: issued, and not pruned.
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` or ``DepotError/Code/historyExpired``.
    package func checkAfter(_ id: Int64, store: String) async throws {
        let pruned = try await prunedThrough()
        if id < pruned { throw HistoryErrors.expired(store: store, after: id, pruned: pruned) }
        let issued = try await lastIssued()
        if id > issued { throw HistoryErrors.neverIssued(store: store, token: id, issued: issued) }
    }

    /// The consumer called `name`, with its lag.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``, naming the others.
    package func consumer(_ name: String, store: String) async throws -> Consumer {
        try await ConsumerStatements.consumer(name, store: store, rows: rows)
    }
}

/// The consumers as a store's reads give them.
enum ConsumerStatements {
    /// Every consumer (or the one called `name`), by name, with its lag.
    static func consumers(named name: String? = nil) -> SQLStatement {
        let transactions = "depot_transactions"
        var statement: SQLStatement = """
            SELECT c.name, c.token, c.acknowledged_at, c.state, \
            (SELECT count(*) FROM \(table: transactions) t WHERE t.id > c.token), \
            coalesce((SELECT \(secondsSince: "t.timestamp") FROM \(table: transactions) t \
            WHERE t.id > c.token ORDER BY t.id LIMIT 1), 0) \
            FROM \(table: "depot_consumers") c
            """
        if let name { statement = statement + " WHERE c.name = \(bind: name)" }
        return statement + " ORDER BY \(byteOrder: "c.name")"
    }

    /// The consumer called `name` read through `rows`, or
    /// ``DepotError/Code/unknownConsumer`` naming the others.
    static func consumer(
        _ name: String, store: String, rows: (SQLStatement) async throws -> [[Value]]
    ) async throws -> Consumer {
        if let consumer = try await rows(consumers(named: name)).first.map(consumer) { return consumer }
        let names = try await rows("SELECT name FROM \(table: "depot_consumers") ORDER BY \(byteOrder: "name")")
            .compactMap { $0[0].text }
        throw HistoryErrors.unknownConsumer(store: store, name: name, names: names)
    }

    static func consumer(_ row: [Value]) -> Consumer {
        Consumer(
            name: row[0].text ?? "", token: HistoryToken(row[1].integer ?? 0),
            lagTransactions: Int(row[4].integer ?? 0), lagSeconds: max(0, row[5].real ?? 0),
            acknowledgedAt: row[2].text ?? "", state: row[3].text.flatMap(Consumer.State.init(rawValue:)) ?? .active)
    }
}

extension StoreReading {
    /// Every consumer of the store, by name, with its lag.
    package func consumers() async throws -> [Consumer] {
        try await rows(ConsumerStatements.consumers()).map(ConsumerStatements.consumer)
    }

}

/// Pruning and consumers, written once over ``HistoryContext``.
extension StoreBackend {
    /// Runs `body` in a transaction of the store's history bookkeeping
    /// (``withHistory(_:)``), one at a time.
    func withBookkeeping<T: Sendable>(_ body: @Sendable (HistoryContext) async throws -> T) async throws -> T {
        let store = settings.name
        return try await withHistory { try await body(HistoryContext(sql: $0, store: store)) }
    }

    /// Deletes the history up to `bound` and remembers where the kept
    /// history starts, so that a client asking after a pruned token gets
    /// ``DepotError/Code/historyExpired`` rather than a silent gap.
    ///
    /// First, the consumers that would hold the prune back with an
    /// unacknowledged transaction older than `history_max_retention` are
    /// marked lost. Then the history goes in steps of about
    /// `history_prune_step` changes, each in a transaction of its own that
    /// moves the pruned mark, so that a large backlog neither holds the
    /// writer for long nor grows the log without bound, and a prune stopped
    /// half way leaves a consistent history. Each step looks at the
    /// consumers again: it stops at the oldest transaction an active
    /// consumer has not acknowledged (one created meanwhile stops the rest;
    /// see ``PruneOutcome``).
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` for a token the store never issued.
    public func pruneHistory(_ bound: PruneBound) async throws -> PruneOutcome {
        let settings = self.settings
        let cutoff = settings.historyMaxRetention.map(Timestamp.ago)
        let step = max(1, settings.historyPruneStep)
        let store = settings.name
        if case .before(let token) = bound { try token.requireWhole(for: "a prune") }
        let before: String? = if case .olderThan(let age) = bound { Timestamp.ago(age) } else { nil }
        var (outcome, target) = try await withBookkeeping { history -> (PruneOutcome, Int64) in
            let target: Int64
            switch bound {
            case .before(let token):
                let issued = try await history.lastIssued()
                guard token.id <= issued + 1 else {
                    throw HistoryErrors.pruneNeverIssued(store: store, token: token, issued: issued)
                }
                target = token.id - 1
            case .olderThan: target = try await history.lastTransaction(before: before ?? "")
            }
            var outcome = PruneOutcome()
            if let cutoff, target > (try await history.prunedThrough()) {
                outcome.lost = try await history.markLost(below: target, committedBefore: cutoff)
            }
            return (outcome, target)
        }
        while true {
            let frozenTarget = target
            let (deleted, holder) = try await withBookkeeping { history -> (Int?, PruneOutcome.HeldBack?) in
                var last = frozenTarget
                var heldBack: PruneOutcome.HeldBack?
                if let holder = try await history.oldestActive(), holder.token < last {
                    last = holder.token
                    heldBack = PruneOutcome.HeldBack(consumer: holder.name, token: HistoryToken(holder.token))
                }
                let already = try await history.prunedThrough()
                guard last > already else { return (nil, heldBack) }
                let upTo = min(last, try await history.stepEnd(after: already, changes: step))
                return (try await history.deleteHistory(after: already, through: upTo), heldBack)
            }
            if let holder {
                outcome.heldBackBy = holder
                target = min(target, holder.token.id)
            }
            guard let deleted else { break }
            outcome.deleted += deleted
            outcome.saves += 1
        }
        return outcome
    }

    /// Deletes the history transactions before `token` (keeping its own).
    @discardableResult
    public func pruneHistory(before token: HistoryToken) async throws -> PruneOutcome {
        try await pruneHistory(.before(token))
    }

    /// Deletes the history transactions committed more than `age` ago.
    @discardableResult
    public func pruneHistory(olderThan age: Duration) async throws -> PruneOutcome {
        try await pruneHistory(.olderThan(age))
    }

    /// Prunes by the configured retention, if there is one.
    @discardableResult
    public func applyHistoryRetention() async throws -> PruneOutcome {
        guard let retention = settings.historyRetention else { return PruneOutcome() }
        return try await pruneHistory(.olderThan(retention))
    }

    /// Creates a consumer that reads the history from `start` on.
    ///
    /// ```swift
    /// try await store.createConsumer("indexer", from: .beginning)
    /// for t in try await store.reads.history(consumer: "indexer", entity: nil, author: nil, limit: 100) { index(t) }
    /// try await store.acknowledge(consumer: "indexer", token: lastIndexed)
    /// ```
    ///
    /// - Throws: ``DepotError/Code/conflict`` when the name is taken;
    ///   ``DepotError/Code/invalidArgument`` for a name that is not one;
    ///   ``DepotError/Code/invalidToken`` or ``DepotError/Code/historyExpired``
    ///   for a start token never issued or already pruned.
    @discardableResult
    public func createConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        try Consumer.checkName(name)
        let store = self.name
        return try await withBookkeeping { history in
            let token = try await history.token(for: start)
            guard try await history.insertConsumer(name, token: token, at: Timestamp.now()) else {
                throw HistoryErrors.consumerExists(store: store, name: name)
            }
            return try await history.consumer(name)
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
        return try await withBookkeeping { history in
            let consumer = try await history.consumer(name)
            if consumer.state == .lost { throw HistoryErrors.lost(consumer: name, store: store) }
            let issued = try await history.lastIssued()
            guard token.id <= issued else {
                throw HistoryErrors.acknowledgedNeverIssued(store: store, token: token, issued: issued)
            }
            guard token > consumer.token else { return consumer }
            try await history.moveConsumer(name, token: token.id, activate: false, at: Timestamp.now())
            return try await history.consumer(name)
        }
    }

    /// Starts a consumer again from `start` (backwards or forwards), and
    /// makes a lost consumer active.
    @discardableResult
    public func resetConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer {
        try await withBookkeeping { history in
            _ = try await history.consumer(name)
            let token = try await history.token(for: start)
            try await history.moveConsumer(name, token: token, activate: true, at: Timestamp.now())
            return try await history.consumer(name)
        }
    }

    /// Drops a consumer; the history it held back may then be pruned.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``.
    public func dropConsumer(_ name: String) async throws {
        try await withBookkeeping { history in
            _ = try await history.consumer(name)
            try await history.deleteConsumer(name)
        }
    }
}
