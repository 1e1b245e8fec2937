/// What the daemon asks of a store, whatever holds it: an SQLite file
/// (``Store``) or a PostgreSQL schema (DESIGN §15, `DepotPostgres`). The
/// daemon opens a store through its backend's `open` and from then on only
/// speaks this contract, so that it does not know which backend a store
/// has; the contract tests (DepotPostgresTests) run the same behaviour on
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
public protocol StoreBackend: Sendable {
    /// The store's name, as in the configuration.
    var name: String { get }
    /// Where the store lives, for people: a file's path, or a server and schema.
    var location: String { get }
    /// How long history is kept (DESIGN §5), nil for ever.
    var historyRetention: Duration? { get }
    /// The store's reads.
    var reads: any StoreReading { get }

    /// Checks that the store answers (the watchdog's probe).
    func ping() async throws
    /// Closes the store: later calls throw ``DepotError/Code/storeClosed``.
    func close() async throws

    // Jobs.
    /// Every persisted job record, oldest first.
    func jobs() async throws -> [(id: String, record: [UInt8])]
    /// Persists a job's record (inserted, or replacing the one with its id).
    /// On a store several hosts serve, a host's write of a job another host
    /// holds, or of a job already ended, changes nothing.
    func putJob(id: String, record: [UInt8]) async throws
    /// A job's persisted record, nil when there is none.
    func job(_ id: String) async throws -> [UInt8]?
    /// How often a host looks for jobs it may take over on a store several
    /// hosts serve (``claimableJobs()``); nil when only this host serves it.
    var jobPollInterval: Duration? { get }
    /// The jobs no live host holds: queued ones, and running ones whose
    /// host's lease lapsed (it died). Always none on a store only this host serves.
    func claimableJobs() async throws -> [(id: String, record: [UInt8])]
    /// Runs job `id`'s work once this host holds the job: at once on a store
    /// only this host serves; on a store several hosts serve (PostgreSQL,
    /// DESIGN §15), after claiming it, waiting while another host holds it
    /// under a live lease, and renewing the lease while `body` runs (`body`
    /// is cancelled if another host took the job over).
    ///
    /// - Returns: `body`'s result, or nil without running it when the job
    ///   ended on another host meanwhile (its record is in ``job(_:)``).
    func runJob<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T?
    /// Asks the host running job `id` to cancel it (at its next save), on a
    /// store several hosts serve; false when no host runs it unfinished
    /// (always on a store only this host serves, whose jobs stop here).
    func requestCancel(_ id: String) async throws -> Bool
    /// Runs an import job to its end, resuming from its checkpoint.
    func importFile(_ request: ImportRequest, progress: @escaping @Sendable (ImportProgress) -> Void) async throws
        -> ImportProgress
    /// The job that imported a file of this content hash, if one did (watched folders).
    func importedFile(hash: String) async throws -> String?
    /// Records that `job` imported a file of this content hash.
    func recordImportedFile(hash: String, path: String, job: String) async throws

    // Batch writes.
    /// Deletes the records a predicate selects, applying delete rules.
    func delete(
        entity: String, where predicate: String?, arguments: [String: Value], author: String, job: String?,
        batchSize: Int?, progress: (@Sendable (WriteCounts) -> Void)?
    ) async throws -> WriteCounts
    /// Sets fields of the records a predicate selects.
    func update(
        entity: String, where predicate: String?, arguments: [String: Value], set values: [String: Value],
        author: String, job: String?, batchSize: Int?,
        progress: (@Sendable (WriteCounts) -> Void)?
    ) async throws -> WriteCounts
    /// Deletes all records but one of each group of duplicates.
    func resolveDuplicates(
        entity: String, by fields: [String], keep: DuplicateResolution, where predicate: String?,
        arguments: [String: Value], author: String, job: String?, batchSize: Int?,
        progress: (@Sendable (WriteCounts) -> Void)?
    ) async throws -> WriteCounts

    // History.
    /// Removes the history before a token.
    func pruneHistory(before token: HistoryToken) async throws -> PruneOutcome
    /// Removes the history older than an age.
    func pruneHistory(olderThan age: Duration) async throws -> PruneOutcome
    /// Prunes by the configured retention, if there is one.
    func applyHistoryRetention() async throws -> PruneOutcome
    /// Creates a consumer at a start (DESIGN §11).
    func createConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer
    /// Moves a consumer's token forward.
    func acknowledge(consumer name: String, token: HistoryToken) async throws -> Consumer
    /// Moves a consumer to a start, back or forward.
    func resetConsumer(_ name: String, from start: Consumer.Start) async throws -> Consumer
    /// Removes a consumer.
    func dropConsumer(_ name: String) async throws
}

/// The reads of a store, whatever holds it (see ``StoreBackend``).
public protocol StoreReading: Sendable {
    /// The store's entities, in configuration order.
    var entities: [EntitySchema] { get }
    /// The entity called `name`, or ``DepotError/Code/unknownEntity`` with a suggestion.
    func entity(_ name: String) throws -> EntitySchema
    /// Checks a descriptor as a fetch would, without running it.
    func check(_ descriptor: FetchDescriptor) throws

    // Fetch.
    func count(_ descriptor: FetchDescriptor) async throws -> Int
    func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier]
    func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet
    func fetchJSONBytes(_ descriptor: FetchDescriptor) async throws -> [UInt8]
    /// The records as one JSON array, handed to `write` in chunks as they
    /// are read: memory holds a chunk, whatever the answer's size.
    func fetchJSON(_ descriptor: FetchDescriptor, write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void)
        async throws
    func fetchSections(_ descriptor: FetchDescriptor) async throws -> [RecordSection]
    /// A fetch's result kept current from the history (live changes, DESIGN §11).
    func resultFeed(_ descriptor: FetchDescriptor) throws -> ResultFeed
    func export(
        _ descriptor: FetchDescriptor, as format: RecordFormat,
        write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void,
        progress: @escaping @Sendable (Int) -> Void
    ) async throws -> Int
    func enumerate(_ descriptor: FetchDescriptor, batchSize: Int) -> RecordBatches
    func aggregate(_ request: AggregateRequest) async throws -> AggregateResult
    func checkDuplicates(
        entity: String, by fields: [String], where predicate: String?, arguments: [String: Value],
        limit: Int?) throws
    /// Checks a batch update as running it would, without writing.
    func checkUpdate(entity: String, where predicate: String?, arguments: [String: Value], set values: [String: Value])
        throws
    func duplicates(
        entity: String, by fields: [String], where predicate: String?, arguments: [String: Value],
        limit: Int?, _ body: @escaping @Sendable (DuplicateGroup) throws -> Void) async throws
    func danglingReferences(limit: Int) async throws -> ReferenceCheck

    // Commits and history.
    /// The number of the store's commits heard so far, from any host.
    var commitCount: UInt64 { get }
    /// Waits for a commit after ``commitCount`` was `version`; false when the store closed.
    func waitForCommit(after version: UInt64) async -> Bool
    func latestToken() async throws -> HistoryToken?
    /// At most `limit` transactions and `maxChanges` changes after `token`
    /// (a transaction larger than that is read in parts: ``HistoryPage``).
    func history(after token: HistoryToken?, entity: String?, author: String?, limit: Int, maxChanges: Int) async throws
        -> [HistoryTransaction]
    func history(consumer name: String, entity: String?, author: String?, limit: Int, maxChanges: Int) async throws
        -> [HistoryTransaction]
    func followHistory(after token: HistoryToken?, entity: String?, author: String?) -> HistoryFollower
    func consumers() async throws -> [Consumer]
    func consumer(_ name: String) async throws -> Consumer
}

extension StoreReading {
    /// ``export(_:as:write:progress:)`` without progress reports.
    public func export(
        _ descriptor: FetchDescriptor, as format: RecordFormat,
        write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void
    ) async throws -> Int {
        try await export(descriptor, as: format, write: write, progress: { _ in })
    }

    /// ``enumerate(_:batchSize:)`` 5,000 records at a time.
    public func enumerate(_ descriptor: FetchDescriptor) -> RecordBatches { enumerate(descriptor, batchSize: 5_000) }

    /// ``fetchJSONBytes(_:)`` as text.
    public func fetchJSON(_ descriptor: FetchDescriptor) async throws -> String {
        String(decoding: try await fetchJSONBytes(descriptor), as: UTF8.self)
    }

    /// Whole transactions, whatever their number of changes.
    public func history(after token: HistoryToken?, entity: String?, author: String?, limit: Int) async throws
        -> [HistoryTransaction]
    {
        try await history(after: token, entity: entity, author: author, limit: limit, maxChanges: .max)
    }

    /// Whole transactions, whatever their number of changes.
    public func history(consumer name: String, entity: String?, author: String?, limit: Int) async throws
        -> [HistoryTransaction]
    {
        try await history(consumer: name, entity: entity, author: author, limit: limit, maxChanges: .max)
    }
}
