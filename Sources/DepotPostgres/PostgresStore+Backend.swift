public import DepotEngine
import Foundation
import PostgresNIO

/// A PostgreSQL store is the other backend of the daemon's store contract,
/// with all of it; where the two differ by nature (order where SQLite goes
/// by storage) docs/postgresql.md says so.
extension PostgresStore: StoreBackend {
    public nonisolated var settings: StoreSettings {
        StoreSettings(
            name: configuration.name, location: configuration.location.description,
            historyRetention: configuration.historyRetention, saveEvery: configuration.saveEvery,
            saveInterval: configuration.saveInterval, adaptiveSaves: false,
            historyMaxRetention: configuration.historyMaxRetention, historyPruneStep: configuration.historyPruneStep,
            importBatches: .perSave(Self.importBatch), schema: schema, dialect: .postgresql, demand: demand)
    }

    /// Records to a batch of an import, about: each batch costs a few round
    /// trips to the server (the lookup of its keys, the COPY of its new
    /// records, the update, the history's COPY), so batches are far larger
    /// than an SQLite store's. A save's run is cut into even batches near this size.
    static let importBatch = 65_536

    package nonisolated var reads: any StoreReading { PostgresReader(store: self) }

    public nonisolated var schemaBox: SchemaBox { box }

    /// Every record of a PostgreSQL store may be an import's: no floor.
    public nonisolated func sourceFloor(of entity: EntitySchema) async throws -> Int64 { 0 }

    public nonisolated func ping() async throws {
        _ = try await read { connection in try await PostgresSQL.textRows(connection, "SELECT 1::text", logger: logger)
        }
    }

}

/// How a PostgreSQL store's jobs run: every host serving it shares its
/// jobs table (DESIGN §15), and a job runs on the host that claims it
/// (`PostgresJobs.swift`); the jobs' SQL is written once
/// (`Store/StoreBackend+Jobs.swift` of the engine).
extension PostgresStore {
    package nonisolated var jobHosting: JobHosting? {
        JobHosting(host: configuration.host, lease: configuration.lease)
    }

    /// States of a job's record that end it (the daemon's, and `done` of ``finishJob(_:host:record:state:)``).
    static let finalStates = Set(finalJobStates)

    /// Claims job `id` for this host (queued, already this host's, or
    /// under a lapsed lease), then runs `body` under a renewed lease; while
    /// another host holds it, checks again every third of a lease.
    public nonisolated func runJob<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T?
    {
        let host = configuration.host, lease = configuration.lease
        while true {
            try Task.checkCancellation()
            let claimed = try await claimJob(id, host: host, lease: lease) != nil
            if claimed {
                events.debug("job claimed", metadata: ["JOB_ID": "\(id)", "STORE": "\(name)"])
                defer { events.debug("job's work ended here", metadata: ["JOB_ID": "\(id)", "STORE": "\(name)"]) }
                return try await withLease(on: id, host: host, lease: lease, body)
            }
            guard let now = try await jobClaim(id), !Self.finalStates.contains(now.state) else { return nil }
            events.debug(
                "job held by another host; waiting",
                metadata: ["JOB_ID": "\(id)", "STORE": "\(name)", "OWNER": "\(now.owner ?? "")"])
            try await Task.sleep(for: lease / 3)
        }
    }
}

/// The reads of a ``PostgresStore`` under the engine's contract.
struct PostgresReader: StoreReading {
    let store: PostgresStore

    var schema: StoreSchema { store.schema }
    var dialect: any SQLDialect { PostgreSQLDialect() }
    var signal: CommitSignal { store.signal }

    func count(_ descriptor: FetchDescriptor) async throws -> Int { try await store.count(descriptor) }
    func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier] {
        try await store.identifiers(descriptor)
    }
    func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet { try await store.fetch(descriptor) }
    func fetchJSONBytes(_ descriptor: FetchDescriptor) async throws -> [UInt8] {
        Array(try await store.fetch(descriptor).jsonArray().utf8)
    }
    func recordHistory(_ entity: String, identifier: [Value], limit: Int) async throws -> [HistoryTransaction] {
        try await store.recordHistory(entity, identifier: identifier, limit: limit)
    }
    func fetchJSON(_ descriptor: FetchDescriptor, write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void)
        async throws
    {
        try await store.fetchJSON(descriptor, write: write)
    }
    func resultFeed(_ descriptor: FetchDescriptor) throws -> ResultFeed {
        try ResultFeed(schema: store.schema, dialect: .postgresql, descriptor) {
            PostgresFeedSource(store: store, query: $0)
        }
    }
    func export(
        _ descriptor: FetchDescriptor, as format: RecordFormat,
        write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void,
        progress: @escaping @Sendable (Int) -> Void
    ) async throws -> Int {
        try await store.export(descriptor, as: format, write: write, progress: progress)
    }
    /// Pages in the descriptor's order (ties by identifier), `after` being
    /// the records read so far.
    func enumerate(_ descriptor: FetchDescriptor, batchSize: Int) -> RecordBatches {
        let store = store
        return RecordBatches(batchSize: batchSize) { after, size in
            var page = descriptor
            page.limit = size
            page.offset = Int(after)
            page.sectionBy = nil
            let records = try await store.fetch(page)
            return (records, after + Int64(records.count))
        }
    }
    func aggregate(_ request: AggregateRequest) async throws -> AggregateResult { try await store.aggregate(request) }
    func duplicates(
        entity: String, by fields: [String], where predicate: String?, arguments: [String: Value],
        limit: Int?, _ body: @escaping @Sendable (DuplicateGroup) throws -> Void
    ) async throws {
        try await store.duplicates(
            entity: entity, by: fields, where: predicate, arguments: arguments, limit: limit, body)
    }
    func danglingReferences(limit: Int) async throws -> ReferenceCheck {
        try await store.danglingReferences(limit: limit)
    }

    func rows(_ statement: SQLStatement) async throws -> [[Value]] {
        try await store.read { connection in try await PostgresSQL.rows(connection, statement, store: store) }
    }
    func history(after token: HistoryToken?, entity: String?, author: String?, limit: Int, maxChanges: Int) async throws
        -> [HistoryTransaction]
    {
        try await store.history(after: token, entity: entity, author: author, limit: limit, maxChanges: maxChanges)
    }
    func followHistory(after token: HistoryToken?, entity: String?, author: String?, maxChanges: Int)
        -> HistoryFollower
    {
        let store = store
        return HistoryFollower(after: token, signal: store.signal) { after, _ in
            try await store.history(
                after: after, entity: entity, author: author, limit: 100,
                maxChanges: min(maxChanges, HistoryFollower.pageChanges))
        }
    }

}
