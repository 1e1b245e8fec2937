public import DepotEngine
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// What a PostgreSQL store is: its name, where it lives, its entities.
public struct PostgresStoreConfiguration: Sendable {
    public var name: String
    public var location: PostgresLocation
    public var entities: [EntitySchema]
    /// An import saves after this many records...
    public var saveEvery: Int
    /// ...or at least this often.
    public var saveInterval: Duration
    /// How long history is kept (DESIGN §5), nil for ever.
    public var historyRetention: Duration?
    /// How long a consumer may hold pruning back before it is marked lost.
    public var historyMaxRetention: Duration? = .seconds(90 * 86_400)
    /// A prune deletes about this many changes a transaction.
    public var historyPruneStep = 50_000
    /// This host's name in the jobs table's claims: the machine's name and
    /// the process, so that two daemons on one machine are two hosts.
    public var host = "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)"
    /// How long a claim on a job lasts unless renewed (every third of it):
    /// a host that dies leaves its job to the others after at most this.
    public var lease: Duration = .seconds(10)

    public init(
        name: String, location: PostgresLocation, entities: [EntitySchema],
        saveEvery: Int = 200_000, saveInterval: Duration = .seconds(2), historyRetention: Duration? = nil
    ) {
        self.historyRetention = historyRetention
        self.name = name
        self.location = location
        self.entities = entities
        self.saveEvery = saveEvery
        self.saveInterval = saveInterval
    }
}

/// One store in a PostgreSQL schema (DESIGN §15): the same tables as an
/// SQLite store (§9), in the store's schema, so that `psql` reads them.
///
/// Every write goes through ``withSave(author:job:_:)``: one PostgreSQL
/// transaction with its history transaction, committed together or not at
/// all, as an SQLite store's save.
///
/// For example:
///
/// ```swift
/// let location = try PostgresLocation(url: "postgresql://depot@/depot?host=/run/postgresql", schema: "travel")
/// let store = try await PostgresStore.open(PostgresStoreConfiguration(name: "travel", location: location,
///                                                                      entities: [trip]))
/// let saved = try await store.save(
///     ChangeSet([
///         .init(.upsert, entity: "Trip", record: ["id": "t1", "name": "Paris", "startDate": "2025-05-02",
///                                                  "budget": 1200.0, "isFavorite": false])
///     ]), author: "me")
/// let trips = try await store.reads.count(FetchDescriptor(entity: "Trip"))
/// ```
public actor PostgresStore {
    public nonisolated let configuration: PostgresStoreConfiguration
    nonisolated let client: PostgresClient
    /// PostgresNIO's logger (critical only: it logs every statement).
    nonisolated let logger: Logger
    /// The store's own events (its jobs' leases), at the level the host's
    /// logging system gives.
    nonisolated let events: Logger
    /// The entities, as the engine's fetch compiler reads them: the
    /// configuration's and those created over the API (DESIGN §18), which
    /// change while the store runs.
    nonisolated let box: SchemaBox
    nonisolated var schema: StoreSchema { box.value }
    /// This host's schema changes, one at a time (``SchemaLock``).
    nonisolated let schemaLock = SchemaLock()
    /// `"schema".` — the prefix of every table's name.
    nonisolated let prefix: String
    /// The id in `depot_layouts` of each entity's fields, in their order
    /// (set when the store opens).
    nonisolated let layouts = Mutex<[String: Int64]>([:])
    private let runner: Task<Void, Never>
    private var listener: Task<Void, Never>?
    private var isClosed = false
    /// Counts the store's commits heard, from this host or any other: every
    /// save announces its token on ``channel`` (`NOTIFY`, delivered when it
    /// commits), and a connection of this store listens.
    nonisolated let signal = CommitSignal()
    /// The saves waiting for the store's one save at a time.
    nonisolated let demand = WriteDemand()
    /// `depot:SCHEMA`, the channel of the store's commits.
    nonisolated var channel: String { "depot:" + configuration.location.schema }

    public nonisolated var name: String { configuration.name }

    private init(
        configuration: PostgresStoreConfiguration, client: PostgresClient, runner: Task<Void, Never>,
        logger: Logger
    ) {
        self.configuration = configuration
        self.client = client
        self.runner = runner
        self.logger = logger
        self.events = Logger(label: "depot.postgres.\(configuration.name).jobs")
        self.box = SchemaBox(StoreSchema(name: configuration.name, entities: configuration.entities))
        self.prefix = PostgresSQL.quote(configuration.location.schema) + "."
    }

    /// Connects, then creates the store's schema and tables or migrates
    /// them to the configured entities, in one transaction.
    ///
    /// - Throws: ``DepotError/Code/database`` when the server cannot be
    ///   reached or refuses the role; ``DepotError/Code/migrationRefused``
    ///   listing every change that cannot migrate, as for an SQLite store.
    public static func open(_ configuration: PostgresStoreConfiguration) async throws -> PostgresStore {
        var logger = Logger(label: "depot.postgres.\(configuration.name)")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: configuration.location.clientConfiguration, backgroundLogger: logger)
        // Unstructured: PostgresNIO's client runs for the store's life; close() cancels it.
        let runner = Task { await client.run() }
        let store = PostgresStore(configuration: configuration, client: client, runner: runner, logger: logger)
        do {
            try await store.transaction { connection in
                try await PostgresMigrator.migrate(connection, store: store)
            }
            try await store.startListening()
        } catch {
            await store.close()
            throw store.translate(error)
        }
        return store
    }

    /// Closes the store's connections; later saves throw ``DepotError/Code/storeClosed``.
    public func close() async {
        guard !isClosed else { return }
        isClosed = true
        listener?.cancel()
        _ = await listener?.value
        signal.close()
        runner.cancel()
        _ = await runner.value
    }

    /// Listens on ``channel`` on a connection of its own, for as long as the
    /// store is open, and counts each commit heard in ``signal``; returns
    /// once the first `LISTEN` is in place, so that no commit made after
    /// `open` returns goes unheard. A lost connection is listened on again
    /// (a commit may have been missed meanwhile: the signal is bumped, and
    /// a waiter rereads).
    private func startListening() async throws {
        let (ready, readyContinuation) = AsyncStream<(any Error)?>.makeStream()
        let client = client, channel = channel, signal = signal
        // Unstructured: the LISTEN connection lives as long as the store; close() cancels it.
        listener = Task {
            var first = true
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            if first {
                                first = false
                                readyContinuation.yield(nil)
                            } else {
                                signal.heard(nil)
                            }
                            for try await notification in notifications {
                                // An entity created or dropped over the API,
                                // here or on another host: read them again.
                                if notification.payload == PostgresStore.entitiesChanged {
                                    try? await self.reloadEntities()
                                    // Live reads of a dropped entity end (on
                                    // every host: the drop's own host too).
                                    signal.bump()
                                    continue
                                }
                                signal.heard(Int64(notification.payload))
                            }
                        }
                    }
                } catch {
                    if first {
                        readyContinuation.yield(error)
                        return
                    }
                    if Task.isCancelled { return }
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
        }
        for await failure in ready {
            if let failure { throw failure }
            return
        }
    }

    /// The number of commits of the store heard so far, from any host.
    public nonisolated var commitCount: UInt64 { signal.version }

    /// The newest history token of a commit heard so far, from any host.
    public nonisolated var heardToken: HistoryToken? { signal.token }

    /// Waits until a commit of the store, from any host, is heard after
    /// ``commitCount`` was `version`.
    ///
    /// - Returns: false when the store closed or the task was cancelled.
    public nonisolated func waitForCommit(after version: UInt64) async -> Bool {
        await signal.wait(after: version)
    }

    /// The entity called `name`.
    nonisolated func entity(_ name: String) throws -> EntitySchema { try schema.entity(name) }

    /// The id of the layout of `entity`'s fields, that its compact values
    /// are written under.
    nonisolated func layout(of entity: EntitySchema) throws -> Int64 {
        guard let id = layouts.withLock({ $0[entity.name] }) else {
            throw DepotError(
                .database, "store \(JSONText.quoted(name)) has no layout of entity \(JSONText.quoted(entity.name))")
        }
        return id
    }

    /// `"schema"."name"`.
    nonisolated func table(_ name: String) -> String { prefix + PostgresSQL.quote(name) }

    /// Runs one save: `body`'s writes commit together, with their history
    /// transaction, or not at all.
    ///
    /// - Returns: `body`'s result and the token of the save's history
    ///   transaction, nil when it changed nothing.
    public func withSave<T: Sendable>(
        author: String, job: String? = nil,
        _ body: @Sendable (PostgresSaveContext) async throws -> T
    )
        async throws -> SaveOutcome<T>
    {
        guard !isClosed else { throw DepotError(.storeClosed, "store \(JSONText.quoted(name)) is closed") }
        // The save's server transaction, and its outcome once its body has
        // run: a COMMIT that fails after that may still have committed.
        let pending = PendingSave<T>()
        do {
            let saved: SaveOutcome<T>
            do {
                saved = try await saveTransaction(author: author, job: job, pending: pending, body)
            } catch {
                let (xid, outcome) = pending.state.withLock { ($0.xid, $0.outcome) }
                guard let xid, let outcome else { throw error }
                // The body ran whole and only the COMMIT failed, the
                // connection lost on the way (a backend ended, a network
                // cut): the server may have committed before it went. Its
                // own record of the transaction says which; a job must not
                // call failed what the store kept.
                guard try await committed(xid: xid, after: error) else { throw error }
                logger.warning(
                    """
                    store \(JSONText.quoted(name)): the connection was lost answering a save's COMMIT; \
                    the server committed it (transaction \(xid))
                    """)
                saved = outcome
            }
            // Heard at once here (its own announcement, heard later, does
            // not count it again); other hosts hear it by the channel.
            if let token = saved.token { signal.bump(token: token.id) }
            return saved
        } catch {
            // The server's errors become the store's; the body's own pass as they are.
            throw error is PSQLError ? translate(error) : error
        }
    }

    /// ``withSave(author:job:_:)``'s transaction; `pending` learns the
    /// server's transaction id at its start and the outcome at its end.
    private func saveTransaction<T: Sendable>(
        author: String, job: String?, pending: PendingSave<T>,
        _ body: @Sendable (PostgresSaveContext) async throws -> T
    ) async throws -> SaveOutcome<T> {
        try await transaction { connection in
            // One save of the store at a time, from every host: the
            // history's tokens commit in their order (a follower never
            // skips one that commits late), and no two saves judge the
            // same stored record at once.
            try await PostgresSQL.lock(connection, "depot-save:" + configuration.location.schema, logger: logger)
            // Unqualified names (COPY's tables) are the store's own. No
            // JIT compilation: a save's statements are planned afresh for
            // each batch, and compiling them (100 ms and more a statement,
            // once their cost passes jit_above_cost) took longer than
            // running them.
            // txid_current: the id txid_status answers for (PostgreSQL
            // 10 and later), taken in the same round trip.
            var settings = PostgresBindings()
            settings.append(PostgresSQL.quote(configuration.location.schema))
            let xid =
                try await PostgresSQL.textRows(
                    connection,
                    "SELECT set_config('search_path', $1, true), "
                        + "set_config('jit', 'off', true), txid_current()::text", settings, logger: logger
                ).first?.last ?? nil
            pending.state.withLock { $0.xid = xid }
            let context = PostgresSaveContext(store: self, connection: connection, author: author, job: job)
            let value: T
            do {
                value = try await body(context)
            } catch {
                context.end()
                throw error
            }
            try await context.finish()
            // Last, just before the COMMIT: the fence keeps the job's row
            // from being claimed until then (its renewals go on).
            if let job { try await fence(job: job, connection: connection) }
            let outcome = SaveOutcome(value: value, token: context.lastTransactionID.map(HistoryToken.init))
            pending.state.withLock { $0.outcome = outcome }
            return outcome
        }
    }

    /// Whether the server committed transaction `xid`, whose COMMIT failed
    /// with `error`: asked on another connection, and asked again, for at
    /// most a minute, while the server still shows it in progress (a backend
    /// finishing its commit after the network went) or cannot be reached (a
    /// restart).
    ///
    /// - Throws: a ``DepotError`` saying the outcome is unknown when the
    ///   server no longer knows (the id is past its memory) or could not be
    ///   asked within the minute.
    private func committed(xid: String, after error: any Error) async throws -> Bool {
        var query = PostgresBindings()
        query.append(Int64(xid) ?? 0)
        let binds = query
        let deadline = ContinuousClock.now + .seconds(60)
        var status: String?
        repeat {
            var asked = true
            do {
                status = try await read { connection in
                    PostgresSQL.scalar(
                        try await PostgresSQL.textRows(
                            connection, "SELECT txid_status($1)::text", binds, logger: logger))
                }
            } catch {
                (asked, status) = (false, nil)
            }
            if status == "committed" { return true }
            if status == "aborted" { return false }
            if status == "in progress" || !asked, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(asked ? 100 : 500))
                continue
            }
            break
        } while true
        throw DepotError(
            .database,
            "store \(JSONText.quoted(name)) (\(configuration.location.description)): the connection was lost "
                + "answering a save's COMMIT (\(PostgresSQL.describe(error))), and whether the server committed "
                + "it is unknown (transaction \(xid): \(status ?? "the server could not be asked")); "
                + "read the store before saving it again")
    }

    /// Runs `body` in a transaction of one of the client's connections.
    nonisolated func transaction<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws
        -> T
    {
        try await client.withConnection { connection in
            try await PostgresSQL.execute(connection, "BEGIN", logger: logger)
            do {
                let value = try await body(connection)
                try await PostgresSQL.execute(connection, "COMMIT", logger: logger)
                return value
            } catch {
                // Not on a connection that closed (the server rolled back):
                // it would never return (``PostgresSQL/whileOpen(_:_:)``).
                if !connection.isClosed { try? await PostgresSQL.execute(connection, "ROLLBACK", logger: logger) }
                throw error
            }
        }
    }

    /// Runs `body` on a connection, outside any transaction of the caller's.
    nonisolated func read<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withConnection { try await body($0) }
        } catch {
            throw translate(error)
        }
    }

    // MARK: - Reads

    /// The number of records of `entity`.
    public nonisolated func count(_ entity: String) async throws -> Int {
        let table = table(try self.entity(entity).name)
        return try await read { connection in
            let rows = try await PostgresSQL.textRows(connection, "SELECT count(*)::text FROM \(table)", logger: logger)
            return PostgresSQL.scalar(rows).flatMap { Int($0) } ?? 0
        }
    }

    /// Every record of `entity`, its fields in the entity's order, sorted
    /// by identifier (as SQLite orders text: by bytes).
    public nonisolated func records(_ entity: String) async throws -> [[Value]] {
        let entity = try self.entity(entity)
        let sql =
            "SELECT " + entity.fields.map { PostgresSQL.selectText($0) }.joined(separator: ", ")
            + " FROM \(table(entity.name)) ORDER BY "
            + entity.identifier.map { PostgresSQL.quote($0) + PostgresSQL.byteOrder(entity, $0) }.joined(
                separator: ", ")
        return try await read { connection in
            try await PostgresSQL.textRows(connection, sql, logger: logger).map { row in
                zip(entity.fields, row).map { PostgresSQL.value($1, as: $0.type) }
            }
        }
    }

    /// The history after `token` (from the start when nil), oldest first,
    /// at most `limit` transactions; with `entity`, only its changes and
    /// the transactions that have some; with `author`, only theirs.
    public nonisolated func history(
        after token: HistoryToken? = nil, entity: String? = nil, author: String? = nil,
        limit: Int = 100, maxChanges: Int = .max
    ) async throws -> [HistoryTransaction] {
        if let entity { _ = try self.entity(entity) }
        guard limit > 0 else { throw DepotError(.invalidArgument, "limit must be at least 1") }
        var transactions =
            "SELECT id::text, timestamp, author, job FROM \(table("depot_transactions")) t "
            + "WHERE id > $1"
        // The rows not wholly read before (a token inside transaction $4
        // read $5 of its changes: a row of a run holds `span` of them), and
        // of those only as many as the page can take (a row of one change
        // may have no span): each row's changes
        // counted from the first (`running`), past at most the 1,023 of a
        // run read before (issue #35: memory holds a page, not the history).
        let changes =
            "WITH rest AS (SELECT txn, id, entity, identifier, kind, fields, tombstone, old, new, layout, "
            + "coalesce(span, 1) AS span, sum(coalesce(span, 1)) OVER (PARTITION BY txn ORDER BY id) AS upto "
            + "FROM \(table("depot_changes")) "
            + "WHERE txn > $1 AND txn <= $2 AND ($3::text IS NULL OR entity = $3)), "
            + "pending AS (SELECT *, sum(span) OVER (ORDER BY txn, id) AS running FROM rest WHERE txn <> $4 OR upto > $5) "
            + "SELECT txn::text, entity, identifier, kind, fields, tombstone, old, new, layout::text, span::text, "
            // pending.txn: a bare txn would sort by the output column txn::text ("10" before "9").
            + "(upto - span)::text FROM pending WHERE running - span < $6 ORDER BY pending.txn, pending.id"
        var binds = PostgresBindings()
        binds.append(token?.wholeThrough ?? 0)
        let changeBinds = binds
        if let author {
            binds.append(author)
            transactions += " AND author = $\(binds.count)"
        }
        if let entity {
            binds.append(entity)
            transactions +=
                " AND EXISTS (SELECT 1 FROM \(table("depot_changes")) c WHERE c.txn = t.id AND c.entity = $\(binds.count))"
        }
        binds.append(Int64(min(limit, 100_000)))
        // t.id: a bare id would sort by the output column id::text ("10" before "9").
        transactions += " ORDER BY t.id LIMIT $\(binds.count)"
        let (headBinds, headSQL, firstBinds, changesSQL) = (binds, transactions, changeBinds, changes)
        let entity = entity
        return try await read { connection in
            if let token { try await checkHistory(connection, after: token.wholeThrough) }
            let heads = try await PostgresSQL.textRows(connection, headSQL, headBinds, logger: logger)
            guard let last = heads.last?[0].flatMap({ Int64($0) }) else { return [] }
            var changeBinds = firstBinds
            changeBinds.append(last)
            changeBinds.append(entity)
            let resumed = token.flatMap { $0.isWhole ? nil : $0 }
            changeBinds.append(resumed?.id ?? 0)
            changeBinds.append(Int64(resumed?.change ?? 0))
            changeBinds.append(Int64(min(maxChanges, Int(Int32.max)) + 1_024))
            let rows = try await PostgresSQL.textRows(connection, changesSQL, changeBinds, logger: logger)
            // Of the first row left of the resumed transaction, the changes read before.
            let skip =
                resumed.flatMap { t in
                    rows.first { $0[0].flatMap { Int64($0) } == t.id }.map {
                        t.change - ($0[10].flatMap { Int($0) } ?? 0)
                    }
                } ?? 0
            var page = HistoryPage(
                heads: heads.compactMap { head -> HistoryTransaction? in
                    guard let id = head[0].flatMap({ Int64($0) }) else { return nil }
                    return HistoryTransaction(
                        token: HistoryToken(id), timestamp: head[1] ?? "", author: head[2] ?? "",
                        job: head[3], changes: [])
                }, after: token, skip: skip, maxChanges: maxChanges)
            var layouts = HistoryLayouts()
            let session = PostgresSession(store: self, connection: connection)
            defer { session.end() }
            reading: for row in rows {
                guard let txn = row[0].flatMap({ Int64($0) }) else { continue }
                let values = row.map { $0.map(Value.string) ?? .null }
                for change in try await layouts.changes(ofRow: values, session, store: name) {
                    guard page.add(change, to: txn) else { break reading }
                }
            }
            return page.result
        }
    }

    /// Drops the schema of `location` and everything in it, on a connection
    /// of its own, the store open or not: tests clean up with it and
    /// benchmarks start clean with it. Not for users' stores.
    package static func dropSchema(_ location: PostgresLocation) async throws {
        var logger = Logger(label: "depot.postgres.drop")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
        // Unstructured: the client runs while the schema is dropped; cancelled on the way out.
        let runner = Task { await client.run() }
        defer { runner.cancel() }
        try await client.withConnection { connection in
            try await PostgresSQL.execute(
                connection,
                "DROP SCHEMA IF EXISTS " + PostgresSQL.quote(location.schema)
                    + " CASCADE", logger: logger)
        }
    }

    // MARK: - Errors

    /// A server's error as a ``DepotError``: a refused connection or role is
    /// ``DepotError/Code/database`` naming where the store lives.
    nonisolated func translate(_ error: any Error) -> any Error {
        if error is DepotError || error is CancellationError { return error }
        // 53100 disk_full: the client's to know, as SQLite's SQLITE_FULL.
        if let error = error as? PSQLError, error.serverInfo?[.sqlState] == "53100" {
            return DepotError(
                .diskFull,
                "store \(JSONText.quoted(name)) (\(configuration.location.description)): "
                    + PostgresSQL.describe(error) + "; the server's disk is full: free space, then retry")
        }
        // 22003 numeric_value_out_of_range: a double's arithmetic past
        // ±1.8e308, where SQLite gives infinity (which no write stores).
        if let error = error as? PSQLError, error.serverInfo?[.sqlState] == "22003" {
            return DepotError(
                .outOfRange,
                "store \(JSONText.quoted(name)): a computed value is beyond what a number holds here "
                    + "(past ±1.8e308): " + PostgresSQL.describe(error))
        }
        return DepotError(
            .database,
            "store \(JSONText.quoted(name)) (\(configuration.location.description)): "
                + PostgresSQL.describe(error))
    }
}

/// A save's server transaction id, and its outcome once its body has run
/// (``PostgresStore/withSave(author:job:_:)``).
final class PendingSave<T: Sendable>: Sendable {
    let state = Mutex<(xid: String?, outcome: SaveOutcome<T>?)>((nil, nil))
}
