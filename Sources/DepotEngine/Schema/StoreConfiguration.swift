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
    /// A batch operation saves after this many records.
    public var saveEvery: Int
    /// A batch operation saves at least this often.
    public var saveInterval: Duration
    /// History older than this is pruned; `nil` keeps it all.
    public var historyRetention: Duration?
    /// How long an active consumer may hold back a prune: one whose oldest
    /// unacknowledged transaction is older is marked lost, and the prune
    /// goes on. `nil` lets consumers hold the history back for ever.
    public var historyMaxRetention: Duration?
    /// A prune deletes in saves of about this many changes (a transaction's
    /// changes always go together).
    public var historyPruneStep = 50_000
    /// The write connection's page cache, in bytes; sized for the identifier
    /// indexes that every save rewrites.
    public var writerCacheBytes: Int

    /// Creates a configuration; the defaults are those of the import benchmark.
    public init(name: String, path: String, entities: [EntitySchema],
                saveEvery: Int = 200_000, saveInterval: Duration = .seconds(2),
                historyRetention: Duration? = nil, historyMaxRetention: Duration? = .seconds(90 * 86_400),
                writerCacheBytes: Int = 48 << 20) {
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
