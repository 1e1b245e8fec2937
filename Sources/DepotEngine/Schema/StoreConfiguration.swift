/// What a store is: its name, its file, its entities and how it saves.
///
/// The SwiftData analog is a `ModelConfiguration` with its schema.
///
/// For example:
///
/// ```swift
/// let config = StoreConfiguration(
///     name: "travel", path: "/var/lib/depot/travel.sqlite", entities: [trip])
/// let store = try await Store.open(config)
/// ```
public struct StoreConfiguration: Sendable {
    /// The store's name, used by the API and in logs.
    public var name: String
    /// The absolute or working-directory-relative path of the SQLite file.
    public var path: String
    /// The entities the store holds.
    public var entities: [EntitySchema]
    /// Where a store on PostgreSQL lives (DESIGN §15); nil for an SQLite
    /// store, at ``path``.
    public var postgres: PostgresSettings?
    /// A batch operation saves after this many records.
    public var saveEvery: Int
    /// A batch operation saves at least this often.
    public var saveInterval: Duration
    /// Whether an import's save also lasts at least eight times as long as
    /// the previous commit took, so that committing stays about a ninth of
    /// the work however large the store's indexes grow: each commit writes
    /// every index page the save dirtied, and a run of records dirties more
    /// of them as the store grows (bench/run-import). depotd sets it when the
    /// store's configuration sets neither `save_every` nor `save_interval`;
    /// a job that sets either saves as it says.
    public var adaptiveSaves = false
    /// History older than this is pruned; `nil` keeps it all.
    public var historyRetention: Duration?
    /// The store's own backups (`[store.backup]`, DESIGN §20): one every
    /// `every` into `backup_dir`, the newest `keep` of them kept; nil for none.
    public var backupSchedule: BackupSchedule?

    /// A store's schedule of backups (`[store.backup] every = "24h", keep = 7`).
    public struct BackupSchedule: Sendable, Hashable {
        public var every: Duration
        public var keep: Int

        public init(every: Duration, keep: Int) {
            self.every = every
            self.keep = keep
        }
    }
    /// The most changes one save holds (`max_save_changes`, DESIGN §16).
    public var maxSaveChanges = 10_000
    /// How long a save's idempotency key is kept (`idempotency_retention`).
    public var idempotencyRetention: Duration = .seconds(86_400)
    /// How long an active consumer may hold back a prune: one whose oldest
    /// unacknowledged transaction is older is marked lost, and the prune
    /// goes on. `nil` lets consumers hold the history back for ever.
    public var historyMaxRetention: Duration?
    /// A prune deletes in saves of about this many changes (a transaction's
    /// changes always go together).
    public var historyPruneStep = 50_000
    /// The write connection's page cache, in bytes. Imports write sorted
    /// runs, which visit the identifier index's pages in order, so the
    /// cache holds mostly the other indexes' hot pages: 32 MB did as well as
    /// 48 MB on 5M trips (bench/run-import), leaving room under the 128 MB
    /// RSS goal for the runs.
    public var writerCacheBytes: Int
    /// The WAL size, in pages, past which a commit asks for a checkpoint
    /// into the store file, made on a thread of its own (`WALCheckpointer`);
    /// `nil` keeps SQLite's 1,000; 0 checkpoints only when the store closes.
    /// For experiments (ImportBench's `WAL_CHECKPOINT`): see BENCHMARKS.md.
    public var walAutocheckpointPages: Int?
    /// What a commit answered to a client survives (`durability`): `.full`
    /// (the default) syncs the WAL at every commit, so that it survives a
    /// power loss; `.normal` syncs only at checkpoints, so that the last
    /// commits before a power loss (never a crash of the process) may be
    /// lost, though the file stays consistent.
    public var durability: Durability = .full

    /// See ``durability``.
    public enum Durability: String, Sendable, CaseIterable {
        case full, normal

        /// SQLite's `PRAGMA synchronous` value.
        public var synchronous: Int { self == .full ? 2 : 1 }
    }
    /// A save inserts its history's changes this many rows to a statement
    /// (one row to a statement costs an import 7-11%: BENCHMARKS.md). At
    /// most 3,000 (nine parameters a row; SQLite allows 32,766). For
    /// experiments (ImportBench's `CHANGES_PER_STATEMENT`).
    public var changesPerStatement = 64
    /// Whether a batch update writes its chunks in a few statements when it
    /// can (``WriteContext/bulkUpdate(_:assignments:computed:after:limit:)``);
    /// off, record by record, for tests that compare the two.
    package var bulkUpdates = true

    /// Creates a configuration; the defaults are those of the import benchmark.
    public init(
        name: String, path: String, entities: [EntitySchema],
        saveEvery: Int = 200_000, saveInterval: Duration = .seconds(2),
        historyRetention: Duration? = nil, historyMaxRetention: Duration? = .seconds(90 * 86_400),
        writerCacheBytes: Int = 32 << 20
    ) {
        self.name = name
        self.path = path
        self.entities = entities
        self.saveEvery = saveEvery
        self.saveInterval = saveInterval
        self.historyRetention = historyRetention
        self.historyMaxRetention = historyMaxRetention
        self.writerCacheBytes = writerCacheBytes
    }
}

/// A store's place on a PostgreSQL server (DESIGN §15), as configured:
/// `url`, `schema`, `password_file`. The `DepotPostgres` module opens it.
public struct PostgresSettings: Sendable, Hashable {
    /// `postgresql://USER@/DATABASE?host=/run/postgresql` or `postgresql://USER@HOST:PORT/DATABASE`.
    public var url: String
    /// The PostgreSQL schema holding the store's tables.
    public var schema: String
    /// A file holding the role's password, read at open.
    public var passwordFile: String?
    /// How long a host's claim on a job lasts unless renewed (`lease`).
    public var lease: Duration

    public init(url: String, schema: String, passwordFile: String? = nil, lease: Duration = .seconds(10)) {
        self.url = url
        self.schema = schema
        self.passwordFile = passwordFile
        self.lease = lease
    }
}
