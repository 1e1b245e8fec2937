/// The writes of one save of a backend (``StoreBackend/withSave(author:job:_:)``):
/// the primitives every write operation is made of. Each logs its changes
/// in the save's history transaction; a save that changes nothing logs
/// nothing.
///
/// The operations above them (import, delete, update, dedupe) are written
/// once, in extensions of ``StoreBackend``; a backend gives these few, with
/// its connections, transactions and SQL text.
package protocol WriteContext: SQLSession {
    /// A batch made ready by ``StoreBackend/prepare(_:_:)``.
    associatedtype Prepared: Sendable
    /// A stored record as the primitives name it: an SQLite store's rowid,
    /// a PostgreSQL store's identifier.
    associatedtype RecordKey: StoredKey

    /// Writes a prepared batch, judging each row (``RowVerdict``).
    ///
    /// - Returns: what happened to the records, with the rows refused and why.
    /// - Throws: ``DepotError/Code/conflict`` under ``ConflictPolicy/fail``
    ///   when a record exists (the whole save rolls back).
    func write(_ batch: Prepared) async throws -> WriteCounts

    /// The records of `selection` after `cursor`, at most `limit`, in the
    /// backend's order: each its key, identifier, the values of the fields
    /// at entity `positions` and those the selection computes; and the
    /// cursor after the last. A computed integer out of the 64-bit range
    /// comes as a double.
    func records(_ selection: RowSelection, positions: [Int], after cursor: RowCursor, limit: Int) async throws
        -> (records: [StoredRecord<RecordKey>], cursor: RowCursor)
    /// Deletes record `key` of `entity`, giving the values it held in the
    /// fields at entity `positions`; nil when it is gone already (the end
    /// of a cycle of cascades).
    func remove(_ key: RecordKey, of entity: EntitySchema, returning positions: [Int]) async throws -> [Value]?
    /// ``updateRows(_:assignments:computed:after:limit:checkReferences:)``'s
    /// chunk of a batch update written in a few statements, when the backend
    /// can write exactly the same records, history and counts that way (and
    /// rejects none); nil otherwise, with nothing written (the caller goes
    /// record by record).
    func bulkUpdate(
        _ selection: RowSelection, assignments: [(Int, Value)], computed: [Int], after cursor: RowCursor, limit: Int
    ) async throws -> (counts: WriteCounts, cursor: RowCursor, more: Bool)?
    /// A revert's page of history transaction `transaction` (its changes
    /// after the first `skip`, at most `limit`) taken back in a few
    /// statements, when the backend can write exactly what taking them back
    /// one by one writes and none is a conflict (a record changed after
    /// `newest`); nil otherwise, with nothing written. `after` is the
    /// backend's place of the `skip`-th change when the last page gave it
    /// (`last`), which spares counting them again.
    func bulkRevert(transaction: Int64, skip: Int, after: Int64?, limit: Int, newest: Int64) async throws
        -> (counts: WriteCounts, taken: Int, continues: Bool, last: Int64)?
    /// A save's updates of the same `fields` (entity positions) of records
    /// of `entity`, in a few statements: each of `rows` holds a record's
    /// identifier values, then its converted values of `fields`, in the
    /// save's order; the same records, history and tokens as setting them
    /// one by one with ``set(_:on:of:)`` and ``log(_:)``. Whether each
    /// record changed (false: it held those values), in order; nil, with
    /// nothing written, when the backend has no such path or one of the
    /// records is not stored or comes twice (the caller goes change by
    /// change, which names the failure).
    func bulkSet(_ entity: EntitySchema, fields: [Int], rows: [[Value]]) async throws -> [Bool]?
    /// The save's history transaction: with `issue`, the token a record
    /// changed in this save takes (its `depot_token`), the transaction's
    /// whether or not it is logged yet; without, the transaction's id, nil
    /// while the save changed nothing (``changeToken()``, ``transaction()``).
    func historyToken(issue: Bool) async throws -> Int64?
    /// Logs one change in the save's history transaction (created on the first).
    func log(_ change: HistoryChange) async throws
    /// Ends this save's history transaction: the changes after it go to a
    /// new one by `author`, under a token of its own (the next save of a
    /// group sharing one commit).
    func beginHistoryTransaction(author: String) async throws
    /// Runs `body` under a savepoint: when it throws, what it wrote (and
    /// the history transaction it began) is undone, and the rest of the
    /// save is kept.
    func withSavepoint<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T
    // Migrations (DESIGN §18); their preparation is written once (``prepareMigration(_:)``).

    /// Writes converted records: each one's values in its changes' columns
    /// (or why it is rejected). The record's own token is kept, so that a
    /// change made after the conversion shows (a token past the one issued
    /// when the conversion's pass began).
    func writeConverted(_ rows: [ConvertedRow<RecordKey>], plan: MigrationPlan) async throws
    /// The switch: each changed field takes its converted column, the
    /// indexes are made again, the store keeps `plan.target`'s definition.
    ///
    /// - Returns: the columns retired and left to empty (an SQLite store
    ///   keeps them, renamed with `suffix`: dropping a column rewrites the table).
    func switchMigration(_ plan: MigrationPlan, retiring suffix: String) async throws -> [String]
}

extension WriteContext {
    /// The token a record changed in this save takes (its `depot_token`):
    /// the save's history transaction's, whether or not it is logged yet.
    package func changeToken() async throws -> Int64 {
        guard let token = try await historyToken(issue: true) else {
            throw DepotError(.database, "the save's history transaction issued no token")
        }
        return token
    }

    /// The id of this save's history transaction; nil while it changed nothing.
    package func transaction() async throws -> Int64? { try await historyToken(issue: false) }
}

/// A stored record as ``WriteContext/records(_:positions:after:limit:)`` gives it.
public struct StoredRecord<Key: Sendable>: Sendable {
    public var key: Key
    public var identifier: [Value]
    /// The values of the fields asked for, in their order, then those its
    /// selection computes (``RowSelection/computed``).
    public var values: [Value]

    package init(key: Key, identifier: [Value], values: [Value]) {
        self.key = key
        self.identifier = identifier
        self.values = values
    }
}

/// A store's name, where it lives, and the settings its operations follow.
public struct StoreSettings: Sendable {
    /// The store's name, as in the configuration.
    public var name: String
    /// Where the store lives, for people: a file's path, or a server and schema.
    public var location: String
    /// How long history is kept (DESIGN §5), nil for ever.
    public var historyRetention: Duration?
    /// Records a save of a batch operation or an import holds, about.
    public var saveEvery: Int
    /// The longest an import's save runs before it commits.
    public var saveInterval: Duration
    /// Whether an import's saves grow with the cost of a commit.
    public var adaptiveSaves: Bool
    /// How long a consumer may hold the history back before it is lost, nil for ever.
    public var historyMaxRetention: Duration?
    /// Changes a step of a prune deletes, about.
    public var historyPruneStep: Int
    /// How an import cuts its saves into batches.
    public var importBatches: ImportBatches
    /// The store's schema now, which a migration's switch replaces.
    package var schemaBox: SchemaBox
    /// The store's schema now (``schemaBox``'s).
    package var schema: StoreSchema { schemaBox.value }
    package var dialect: any SQLDialect
    /// The saves waiting for the store's writer (its jobs' saves yield to them).
    package var demand: WriteDemand
    /// The hosts that serve the store together (a PostgreSQL store, DESIGN
    /// §15): this host's name and its lease on a job; nil when only this
    /// host serves the store.
    package var jobHosting: JobHosting?

    package init(
        name: String, location: String, historyRetention: Duration?, saveEvery: Int, saveInterval: Duration,
        adaptiveSaves: Bool, historyMaxRetention: Duration?, historyPruneStep: Int, importBatches: ImportBatches,
        schemaBox: SchemaBox, dialect: any SQLDialect, demand: WriteDemand, jobHosting: JobHosting? = nil
    ) {
        self.jobHosting = jobHosting
        self.name = name
        self.location = location
        self.historyRetention = historyRetention
        self.saveEvery = saveEvery
        self.saveInterval = saveInterval
        self.adaptiveSaves = adaptiveSaves
        self.historyMaxRetention = historyMaxRetention
        self.historyPruneStep = historyPruneStep
        self.importBatches = importBatches
        self.schemaBox = schemaBox
        self.dialect = dialect
        self.demand = demand
    }
}

/// How an import cuts its saves into batches (a backend's cost of a batch).
public enum ImportBatches: Sendable, Hashable {
    /// Batches of this many records: a batch costs little (SQLite, a
    /// statement a row in-process).
    case rows(Int)
    /// Each save's run cut into even batches near this many records: a
    /// batch costs a few round trips to a server (PostgreSQL).
    case perSave(Int)
}

/// How ``StoreBackend/prepare(_:_:)`` makes a batch ready.
public struct BatchOptions: Sendable {
    /// What a record that exists already does.
    public var policy: ConflictPolicy
    /// Keep references to records that do not exist (yet) instead of
    /// rejecting their rows (`references = "defer"`, DESIGN §12).
    public var deferReferences: Bool
    /// The import the batch is part of, if any: of the rows of one
    /// identifier in the batch, only the last is written under `upsert`
    /// and `replace` (the others are ``WriteCounts/duplicates``), and a
    /// record written earlier from the same source is named as appearing
    /// twice under `fail`.
    public var source: ImportSource?

    public init(policy: ConflictPolicy, deferReferences: Bool = false, source: ImportSource? = nil) {
        self.policy = policy
        self.deferReferences = deferReferences
        self.source = source
    }

    /// Whether, of the rows of one identifier in a batch, only the last is written.
    package var supersedes: Bool { source != nil && (policy == .upsert || policy == .replace) }
}

/// One import job's source of records, as its batches' writes see it.
public final class ImportSource: Sendable {
    /// Every stored record past this floor (an SQLite store's rowid) was
    /// written from this source (0 where a backend has no such order).
    public let floor: Int64
    /// The identifiers the job gave so far (a backend that looks up only
    /// the rows whose key the job may have written before).
    package let keys = SourceKeys()

    public init(floor: Int64) { self.floor = floor }
}

/// The records a batch delete or update takes, in the backend's order,
/// compiled in the backend's dialect.
public struct RowSelection: Sendable {
    package enum Kind: Sendable {
        /// The records of an entity that a compiled predicate matches.
        case matching(SQLFragment)
        /// All records but one of each group of duplicates.
        case redundant(DuplicateQuery, keep: DuplicateResolution)
    }
    package let entity: EntitySchema
    package let kind: Kind
    /// The store's entities: what refers to the records taken.
    package let schema: StoreSchema
    /// Values computed for each record (a computed update's), read after
    /// its fields; a `matching` predicate's arguments bind theirs first.
    package let computed: [ComputedColumns.Column]

    package init(_ entity: EntitySchema, _ kind: Kind, in schema: StoreSchema, computed: [ComputedColumns.Column] = [])
    {
        self.entity = entity
        self.kind = kind
        self.schema = schema
        self.computed = computed
    }
}

/// Where a batch update goes on from, in the backend's order of records.
public enum RowCursor: Sendable, Hashable {
    /// Before the first record.
    case start
    /// After the record of this rowid (SQLite's storage order).
    case rowid(Int64)
    /// After the record of this identifier (identifier order).
    case identifier([Value])
}

/// How far ``StoreBackend/pruneHistory(_:)`` goes.
public enum PruneBound: Sendable, Hashable {
    /// The transactions before this token (keeping its own).
    case before(HistoryToken)
    /// The transactions committed more than this long ago.
    case olderThan(Duration)
}
