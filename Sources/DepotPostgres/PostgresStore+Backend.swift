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
            importBatches: .perSave(Self.importBatch), schemaBox: box, dialect: .postgresql, demand: demand,
            jobHosting: JobHosting(host: configuration.host, lease: configuration.lease))
    }

    /// Records to a batch of an import, about: each batch costs a few round
    /// trips to the server (the lookup of its keys, the COPY of its new
    /// records, the update, the history's COPY), so batches are far larger
    /// than an SQLite store's. A save's run is cut into even batches near this size.
    static let importBatch = 65_536

    package nonisolated var reads: any StoreReading { PostgresReader(store: self) }

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

/// The reads of a ``PostgresStore`` under the engine's contract: its read
/// primitives; the reads themselves are written once in the engine.
struct PostgresReader: StoreReading {
    let store: PostgresStore

    var schema: StoreSchema { store.schema }
    var dialect: any SQLDialect { PostgreSQLDialect() }
    var signal: CommitSignal { store.signal }

    func rows(_ statement: SQLStatement) async throws -> [[Value]] {
        try await store.read { connection in try await PostgresSQL.rows(connection, statement, store: store) }
    }

    /// One repeatable-read, read-only transaction: one snapshot.
    func snapshot<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        try await store.snapshot { connection in
            let session = PostgresSession(store: store, connection: connection)
            defer { session.end() }
            return try await body(session)
        }
    }

    func stream(
        _ statement: SQLStatement, fields: [Field], as form: RowForm, long: Bool,
        _ body: @escaping @Sendable (RowChunk) throws -> Bool
    ) async throws {
        try await store.stream(statement, fields: fields, as: form, body)
    }

    func history(
        after token: HistoryToken?, entity: String?, author: String?, limit: Int, maxChanges: Int, live: Bool
    ) async throws -> [HistoryTransaction] {
        try await store.history(after: token, entity: entity, author: author, limit: limit, maxChanges: maxChanges)
    }

    func resultFeed(_ descriptor: FetchDescriptor) throws -> ResultFeed {
        try ResultFeed(reads: self, descriptor)
    }
}
