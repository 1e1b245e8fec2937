import CDepotSQLite
import Foundation
import GRDB

/// One SQLite store and the actor that owns its write connection.
///
/// The `@ModelActor` analog: every write to the store goes through this
/// actor, one save (one SQLite transaction) at a time, in order. Reads go
/// through ``reader``, on WAL reader connections, and never wait for a save.
///
/// For example:
///
/// ```swift
/// let store = try await Store.open(configuration)
/// var batch = RecordBatch(entity: "Trip", columns: ["id", "name"])
/// batch.append(["t1", "Paris"])
/// _ = try await store.save(author: "me") { try $0.write(batch, policy: .upsert) }
/// let n = try await store.reader.count(FetchDescriptor(entity: "Trip"))
/// ```
public actor Store {
    /// The store's configuration.
    public nonisolated let configuration: StoreConfiguration
    /// Reads: fetches, aggregates, duplicates and history, on WAL readers.
    public nonisolated let reader: StoreReader

    nonisolated let pool: DatabasePool
    nonisolated let box: SchemaBox
    /// The store's schema now: the configuration's entities and those
    /// created over the API (DESIGN §18).
    nonisolated var schema: StoreSchema { box.value }
    nonisolated let signal: CommitSignal
    /// The saves waiting for the writer.
    nonisolated let demand = WriteDemand()
    /// Copies the WAL into the store file off the writer's path; nil when
    /// `walAutocheckpointPages` is 0.
    let checkpointer: WALCheckpointer?
    /// The close under way or done (``close()``).
    private var closed: Task<Void, any Error>?
    /// Whether ``close()`` was called.
    var isClosed: Bool { closed != nil }

    /// The store's name.
    public nonisolated var name: String { configuration.name }

    private init(
        configuration: StoreConfiguration, pool: DatabasePool, checkpointer: WALCheckpointer?, created: [EntitySchema],
        migrations: [MigrationPlan]
    ) {
        self.configuration = configuration
        self.pool = pool
        self.checkpointer = checkpointer
        self.box = SchemaBox(
            StoreSchema(
                name: configuration.name, entities: configuration.entities + created,
                changesPerStatement: configuration.changesPerStatement,
                bulkUpdates: configuration.bulkUpdates, createdByAPI: Set(created.map(\.name)),
                migrations: migrations))
        self.signal = CommitSignal()
        self.reader = StoreReader(pool: pool, schema: box, signal: signal)
    }

    deinit {
        // A store dropped without close() ends its checkpoint thread too.
        checkpointer?.close()
    }

    /// Process-wide SQLite settings, made when the program loads (see
    /// `depot_sqlite.h`); referenced here so the shim is always linked in.
    private static let sqliteSetUp: Int32 = depot_sqlite_disable_memstatus()

    /// Opens a store, creating its file or migrating it to the configured schema.
    ///
    /// - Throws: ``DepotError/Code/migrationRefused`` listing every
    ///   incompatible change; ``DepotError/Code/database`` when the file
    ///   cannot be opened (its folder missing, no permission, not a database).
    public static func open(_ configuration: StoreConfiguration) async throws -> Store {
        _ = sqliteSetUp
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.maximumReaderCount = 8
        let cachePages = -(configuration.writerCacheBytes / 1024)
        let walPages = configuration.walAutocheckpointPages
        // The WAL is copied into the store file on a thread of its own
        // (WALCheckpointer), not by the commit that fills it; 0 pages (for
        // experiments) keeps SQLite from checkpointing until the store closes.
        let checkpointer =
            walPages == 0
            ? nil
            : WALCheckpointer(
                path: configuration.path, pages: walPages ?? 1_000,
                synchronous: configuration.durability.synchronous)
        config.prepareDatabase { db in
            db.add(function: TextFolding.function)
            if let connection = db.sqliteConnection {
                JSONNumberFunction.install(on: connection)
                JSONDoubleFunction.install(on: connection)
            }
            if !db.configuration.readonly {
                // synchronous is set after the pool opens (see below).
                try db.execute(sql: "PRAGMA cache_size = \(cachePages)")
                if let checkpointer, let connection = db.sqliteConnection {
                    checkpointer.install(on: connection)
                } else {
                    try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                }
            }
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: configuration.path, configuration: config)
        } catch {
            checkpointer?.close()
            throw DepotError(
                .database,
                "store \(JSONText.quoted(configuration.name)) cannot open "
                    + "\(configuration.path): \(Store.describe(error)); check that its folder exists and is writable")
        }
        let created: [EntitySchema]
        let migrations: [MigrationPlan]
        do {
            // GRDB's WAL setup of the writer sets synchronous = NORMAL after
            // prepareDatabase ran (Database.setUpWALMode), which left answered
            // commits unsynced (issue #35): set it again here, once the
            // writer connection is open for good.
            try await pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(configuration.durability.synchronous)")
            }
            (created, migrations) = try await pool.write { db in
                try SystemTables.migrate(db, store: configuration.name)
                let created = try SchemaMigrator.createdEntities(db, store: configuration.name)
                try EntityDefinition.checkNames(
                    configured: configuration.entities, created: created, store: configuration.name)
                let plans = try SchemaMigrator.migrate(
                    db, store: configuration.name, entities: configuration.entities + created)
                return (created, plans)
            }
        } catch {
            checkpointer?.close()
            try? pool.close()
            throw Store.translate(error, store: configuration.name)
        }
        return Store(
            configuration: configuration, pool: pool, checkpointer: checkpointer, created: created,
            migrations: migrations)
    }

    /// Runs one save: `body`'s writes commit together, with their history
    /// transaction, or not at all.
    ///
    /// - Parameters:
    ///   - author: who made the change, recorded in history (`user:alice`, `import`).
    ///   - job: the job the save belongs to, recorded in history.
    /// - Returns: `body`'s result and the token of the history transaction,
    ///   `nil` when the save changed nothing.
    /// - Throws: what `body` throws (the save then rolls back), or
    ///   ``DepotError/Code/database`` for SQLite failures such as a full disk.
    public func save<T: Sendable>(
        author: String, job: String? = nil,
        _ body: @escaping @Sendable (SaveContext) throws -> T
    ) async throws -> SaveOutcome<T> {
        guard !isClosed else { throw DepotError(.storeClosed, "store \(JSONText.quoted(name)) is closed") }
        let schema = self.schema
        let outcome: SaveOutcome<T>
        do {
            outcome = try await pool.write { db in
                let context = SaveContext(db: db, store: schema, author: author, job: job)
                let value = try body(context)
                try context.flushChanges()
                return SaveOutcome(value: value, token: context.transactionID.map(HistoryToken.init))
            }
        } catch {
            throw Store.translate(error, store: name)
        }
        if let token = outcome.token { signal.bump(token: token.id) }
        return outcome
    }

    /// Answers when the store's write connection is responsive; the daemon's
    /// watchdog asks this before it tells systemd all is well.
    public func ping() async throws {
        _ = try await pool.write { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    /// Closes the store: followers end, later saves throw ``DepotError/Code/storeClosed``.
    /// A second call waits for the first one's close. Streamed reads under
    /// way get up to 5 s to end; then every connection closes, and the WAL
    /// is copied into the store file and removed (``WALCheckpointer/finish(path:)``).
    ///
    /// GRDB's `close` waits for the reads under way to give their
    /// connections back, and an async read gives its connection back on the
    /// threads every task shares. So that wait happens on a thread of its
    /// own (``closing``). On one of those threads, which are as many as the
    /// cores, it could hold up the very read it waits for: the test suite
    /// hung there on 2 cores while another of them waited for a process to
    /// exit.
    public func close() async throws {
        if let closed { return try await closed.value }
        signal.close()
        let checkpointer = checkpointer
        let pool = pool
        let path = configuration.path
        let streams = reader.streams
        let closed = Task<Void, any Error> {
            // The streamed reads end first (the daemon has stopped their
            // streams): each holds a connection that would keep the WAL.
            _ = await streams.ended(within: .seconds(5))
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Store.closing.async {
                    checkpointer?.close()
                    continuation.resume(
                        with: Result {
                            try pool.close()
                            // Every connection is closed: the WAL goes into the file.
                            WALCheckpointer.finish(path: path)
                        })
                }
            }
        }
        self.closed = closed
        try await closed.value
    }

    /// Where stores close: a queue of its own, whose blocks get threads of
    /// their own (as ``ImportFeed``'s wait for the parser does).
    private static let closing = DispatchQueue(label: "depot-store-close", attributes: .concurrent)

    // MARK: - Errors

    static func describe(_ error: any Error) -> String {
        if let db = error as? DatabaseError {
            return "\(db.message ?? "error") (SQLite \(db.extendedResultCode))"
        }
        return String(describing: error)
    }

    /// Turns GRDB's errors into ``DepotError``s; lets ours and cancellation through.
    static func translate(_ error: any Error, store: String) -> any Error {
        if error is DepotError || error is CancellationError { return error }
        if let db = error as? DatabaseError {
            // A read that comes while the daemon stops finds the pool closed:
            // the store is closed (503, try again), not a database failure.
            if db.resultCode == .SQLITE_MISUSE, db.message?.contains("Connection is closed") == true {
                return DepotError(
                    .storeClosed, "store \(JSONText.quoted(store)) is closed (the daemon is stopping); try again")
            }
            // The compiler keeps predicates inside SQLite's limits; should one
            // still pass them, it is the request's fault, not the store's.
            let limits = [
                "parser stack overflow", "Expression tree is too large", "too many SQL variables",
                "LIKE or GLOB pattern too complex", "too many terms in compound SELECT"
            ]
            if db.resultCode == .SQLITE_TOOBIG
                || limits.contains(where: { db.message?.contains($0) == true })
            {
                return DepotError(
                    .invalidPredicate,
                    "the request is too large or too deeply nested for SQLite "
                        + "(\(db.message ?? "too big")); simplify the predicate")
            }
            // An entity's table dropped while a request that named it ran
            // (issue 51: SQLite's own text reached the client).
            if let message = db.message, message.hasPrefix("no such table: ") {
                return DepotError(
                    .unknownEntity,
                    "store \(JSONText.quoted(store)): the table of an entity this request uses is gone "
                        + "(the entity was dropped while it ran)")
            }
            // SQLite's sum() of integers past Int64: the request's answer does not fit.
            if db.message?.contains("integer overflow") == true {
                return DepotError(
                    .outOfRange,
                    "a sum overflows a 64-bit integer (past ±9,223,372,036,854,775,807); "
                        + "ask for avg, or declare the field double")
            }
            // The client's to know: 507, not a database failure (issue #35).
            if db.resultCode == .SQLITE_FULL {
                return DepotError(
                    .diskFull,
                    "store \(JSONText.quoted(store)): \(describe(db)); the disk is full: "
                        + "free space, then retry (nothing of this save was kept)")
            }
            // The disk failed a read, a write or a sync (an fsync's EIO):
            // `io`, as docs/api.md has it, not a failure of the request
            // (issue 51: a save whose fsync failed answered `500 internal`).
            if db.resultCode == .SQLITE_IOERR {
                return DepotError(
                    .io,
                    "store \(JSONText.quoted(store)): the disk failed to read or write the store file "
                        + "(\(describe(db))); nothing of this request was kept; see the system's log")
            }
            var hint = ""
            switch db.resultCode {
            case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN:
                hint = "; check the permissions of the store file and its folder"
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: hint = "; the store file is damaged or not a Depot store"
            case .SQLITE_BUSY: hint = "; another process holds the store's write lock"
            default: break
            }
            return DepotError(.database, "store \(JSONText.quoted(store)): \(describe(db))\(hint)")
        }
        return DepotError(.database, "store \(JSONText.quoted(store)): \(describe(error))")
    }
}

/// What a save returned, and the history transaction it recorded.
public struct SaveOutcome<T: Sendable>: Sendable {
    /// What the save's body returned.
    public var value: T
    /// The history token of the save, or `nil` when it changed nothing.
    public var token: HistoryToken?

    package init(value: T, token: HistoryToken?) {
        self.value = value
        self.token = token
    }
}
