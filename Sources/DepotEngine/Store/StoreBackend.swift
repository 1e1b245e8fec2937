/// What the daemon asks of a store, whatever holds it: an SQLite file
/// (``Store``) or a PostgreSQL schema (DESIGN §15, `DepotPostgres`). The
/// daemon opens a store through its backend's `open` and from then on only
/// speaks this contract, so that it does not know which backend a store
/// has; the contract tests (StoreContractTests) run the same behaviour on
/// both.
///
/// A backend that cannot do one of these things throws
/// ``DepotError/Code/invalidArgument`` naming it, never a wrong answer.
///
/// For example, a count that works the same on either backend:
///
/// ```swift
/// func trips(_ store: any StoreBackend) async throws -> Int {
///     try await store.reads.count(FetchDescriptor(entity: "Trip"))
/// }
/// ```
package protocol StoreBackend: Sendable {
    /// The writes of one save of this backend: one transaction.
    associatedtype Context: WriteContext
    /// A transaction of the history's bookkeeping (``withHistory(_:)``).
    associatedtype History: SQLSession

    /// The store's name, where it lives, and how its saves and history go.
    var settings: StoreSettings { get }
    /// The store's reads.
    var reads: any StoreReading { get }

    /// Checks that the store answers (the watchdog's probe).
    func ping() async throws
    /// Closes the store: later calls throw ``DepotError/Code/storeClosed``.
    func close() async throws

    /// Runs one save: `body`'s writes commit together, with their history
    /// transaction and any checkpoint set, or not at all (when `body`
    /// throws, or the commit fails).
    ///
    /// - Returns: `body`'s result and the save's history token, nil when it
    ///   changed nothing.
    func withSave<T: Sendable>(author: String, job: String?, _ body: @Sendable (Context) async throws -> T)
        async throws -> SaveOutcome<T>
    /// Makes a batch ready for a save's ``WriteContext/write(_:)``, without
    /// the store: on any thread, while another save runs (an import reads
    /// and prepares the next batch while the current one is written).
    ///
    /// - Throws: ``DepotError/Code/unknownEntity`` or
    ///   ``DepotError/Code/unknownField`` for a batch that does not fit the schema.
    func prepare(_ batch: RecordBatch, _ options: BatchOptions) throws -> Context.Prepared

    /// Creates entity `entity` over the API (DESIGN §18), kept in the store
    /// across restarts; or changes the one created so, as a configuration's
    /// entity changes when the store opens (an added optional field, the
    /// indexes).
    ///
    /// - Returns: false when the entity is as given already.
    /// - Throws: ``DepotError/Code/conflict`` for an entity of the
    ///   configuration; ``DepotError/Code/migrationRefused`` for a change
    ///   the store cannot take; ``DepotError/Code/invalidSchema``.
    func putEntity(_ entity: EntitySchema) async throws -> Bool
    /// Brings the open store to the configuration's `entities` (a reload),
    /// as opening it would: renames, added fields and indexes applied, a
    /// migration waiting for each change a `convert` explains
    /// (``StoreSchema/migrations``).
    ///
    /// - Throws: ``DepotError/Code/migrationRefused`` listing every change
    ///   the store cannot take (nothing is changed).
    func reconfigure(entities: [EntitySchema]) async throws
    /// Drops entity `name`, created over the API, when it holds no record.
    ///
    /// - Throws: ``DepotError/Code/conflict`` for an entity of the
    ///   configuration or one holding records; ``DepotError/Code/unknownEntity``.
    func dropEntity(_ name: String) async throws

    /// Runs `body` in a transaction of the store's system tables (the
    /// history's bookkeeping: pruning, consumers; the daemon's jobs), one
    /// at a time.
    func withHistory<T: Sendable>(_ body: @Sendable (History) async throws -> T) async throws -> T

    /// Runs job `id`'s work once this host holds the job: at once on a store
    /// only this host serves; on a store several hosts serve (PostgreSQL,
    /// DESIGN §15), after claiming it, waiting while another host holds it
    /// under a live lease, and renewing the lease while `body` runs (`body`
    /// is cancelled if another host took the job over).
    ///
    /// - Returns: `body`'s result, or nil without running it when the job
    ///   ended on another host meanwhile (its record is in ``job(_:)``).
    func runJob<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T?
}

/// The reads of a store, whatever holds it (see ``StoreBackend``): the
/// primitives below, each "run this SQL on a read snapshot"; fetches,
/// counts, exports, aggregates, duplicates, the references check and a
/// record's history are written once above them
/// (`Store/StoreReading+Reads.swift`), as SQL in the store's dialect.
package protocol StoreReading: Sendable {
    /// The store's schema now (entities created over the API, a
    /// migration's switch change it).
    var schema: StoreSchema { get }
    /// The SQL of the store's backend.
    var dialect: any SQLDialect { get }
    /// The store's commits, heard from any host.
    var signal: CommitSignal { get }

    /// The rows of `statement`, read in one snapshot of the store.
    func rows(_ statement: SQLStatement) async throws -> [[Value]]
    /// Runs `body` in one read snapshot: its statements all see the store
    /// as one commit left it.
    func snapshot<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T
    /// The rows of `statement`, read as `fields`, handed to `body` a chunk
    /// at a time as they are read (``RowChunk``), as values or encoded
    /// (`form`); in one snapshot, on a connection of its own when `long`
    /// (the read lasts as long as its caller takes: no reader of a pool is
    /// held). `body` returns false to stop the read. Cancellation ends it
    /// between chunks.
    func stream(
        _ statement: SQLStatement, fields: [Field], as form: RowForm, long: Bool,
        _ body: @escaping @Sendable (RowChunk) throws -> Bool
    ) async throws

    /// The change feed: at most `limit` transactions and `maxChanges`
    /// changes after `token` (a transaction larger than that is read in
    /// parts: ``HistoryPage``). `live`: a follower's read just after a
    /// commit, which may share its snapshot with the other followers woken
    /// by it.
    ///
    /// - Throws: ``DepotError/Code/historyExpired`` when transactions after
    ///   `token` were pruned; ``DepotError/Code/invalidToken`` for a token
    ///   the store never issued; ``DepotError/Code/unknownEntity``.
    func history(
        after token: HistoryToken?, entity: String?, author: String?, limit: Int, maxChanges: Int, live: Bool
    ) async throws -> [HistoryTransaction]
    /// A fetch's result kept current from the history (live changes, DESIGN §11).
    func resultFeed(_ descriptor: FetchDescriptor) throws -> ResultFeed
}

/// How ``StoreReading/stream(_:fields:as:long:_:)`` hands out its rows.
package enum RowForm: Sendable, Hashable {
    /// Each row's values, as its fields' (``RowChunk/values``).
    case values
    /// Each row a JSON object, after a comma but the first of the read:
    /// the elements of one JSON array (``RowChunk/bytes``).
    case json
    /// Each row a line of `format` (no CSV header).
    case lines(RecordFormat)
}

/// A chunk of ``StoreReading/stream(_:fields:as:long:_:)``'s rows: about a
/// megabyte of text, or 8,192 rows of values.
package struct RowChunk: Sendable {
    /// How many rows it holds.
    package var count: Int
    /// The rows' values (``RowForm/values``).
    package var values: [[Value]]
    /// The rows encoded (``RowForm/json``, ``RowForm/lines(_:)``).
    package var bytes: [UInt8]

    package init(count: Int, values: [[Value]] = [], bytes: [UInt8] = []) {
        self.count = count
        self.values = values
        self.bytes = bytes
    }
}

extension StoreBackend {
    /// The floor of a new import's records in `entity` (``ImportSource/floor``):
    /// where records are kept in the order they are written (SQLite's
    /// rowid), the greatest key, which a new import writes after; 0 where
    /// they are not (PostgreSQL), every record then being maybe an import's.
    package func sourceFloor(of entity: EntitySchema) async throws -> Int64 {
        guard settings.dialect.recordKey(entity).match == ["rowid"] else { return 0 }
        return try await reads.rows("SELECT max(rowid) FROM \(table: entity)").first?.first?.integer ?? 0
    }
}
