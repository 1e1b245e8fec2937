import DepotEngine
import Foundation
import GRDB
import Testing

@testable import DepotPostgres

/// The PostgreSQL server the tests use: a private cluster that
/// scripts/test starts (scripts/pg-cluster), named by
/// DEPOT_TEST_POSTGRES_URL. Without it the PostgreSQL cases are skipped,
/// unless DEPOT_REQUIRE_POSTGRES=1 (scripts/test, so CI), where its
/// absence fails the suite.
enum TestServer {
    static let url = ProcessInfo.processInfo.environment["DEPOT_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let required = ProcessInfo.processInfo.environment["DEPOT_REQUIRE_POSTGRES"] == "1"
    static var available: Bool { url != nil }
}

/// The two backends as the contract tests drive them: one save a call.
protocol Backend: Sendable {
    var name: String { get }
    /// The store as the daemon speaks to it (``StoreBackend``).
    var contract: any StoreBackend { get }
    func checkpoint(job: String) async throws -> [UInt8]?
    /// Every record, its fields in the entity's order, sorted by identifier.
    func records(_ entity: String) async throws -> [[Value]]
    func history() async throws -> [HistoryTransaction]
    func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet
    func count(_ descriptor: FetchDescriptor) async throws -> Int
    func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier]
    /// Closes the store and opens it again with `entities` (a migration).
    func reopen(entities: [EntitySchema]) async throws -> any Backend
    /// The secondary indexes on an entity's table, read from the
    /// database's own catalog: each its fields in order, sorted.
    func indexes(_ entity: String) async throws -> [[String]]
    /// The tables of the store's entities in the database's own catalog
    /// (not the `depot_` ones), sorted: an entity's table without its
    /// entity is an orphan.
    func tables() async throws -> [String]
    /// Runs an import to its end, or until the save `cancelAfter` (then
    /// throws CancellationError).
    func importFile(_ request: ImportRequest, cancelAfter: Int?) async throws -> ImportProgress
    func close() async
}

/// Runs `body` with a progress handler that cancels the running task once
/// `stop` saves have committed.
func cancelling(
    after stop: Int?,
    _ body: @escaping @Sendable (@escaping @Sendable (ImportProgress) -> Void) async throws -> ImportProgress
)
    async throws -> ImportProgress
{
    let task = Task {
        try await body { progress in
            if let stop, progress.saves >= stop { withUnsafeCurrentTask { $0?.cancel() } }
        }
    }
    return try await task.value
}

/// Runs a batch write whose progress handler cancels its task once
/// `counted` of the counts so far reaches `limit` (a job stopped between two
/// saves); nil runs it to its end.
func stopping(
    at limit: Int?, counting counted: @escaping @Sendable (WriteCounts) -> Int,
    _ body: @escaping @Sendable (@escaping @Sendable (WriteCounts) -> Void) async throws -> WriteCounts
) async throws -> WriteCounts {
    let task = Task {
        try await body { counts in
            if let limit, counted(counts) >= limit { withUnsafeCurrentTask { $0?.cancel() } }
        }
    }
    return try await task.value
}

extension Backend {
    func write(_ batch: RecordBatch, policy: ConflictPolicy = .upsert) async throws -> WriteCounts {
        try await write(batch, policy: policy, supersede: false)
    }

    /// One save that writes `batch`, through the store contract as the
    /// operations write: `supersede` as an import's batch (of one
    /// identifier's rows only the last is written), every stored record
    /// from before it.
    func write(_ batch: RecordBatch, policy: ConflictPolicy, supersede: Bool) async throws -> WriteCounts {
        try await Contract.save(
            contract, batch,
            BatchOptions(policy: policy, source: supersede ? ImportSource(floor: .max) : nil))
    }

    /// A save that writes `batch` and then a checkpoint, in one transaction.
    func write(_ batch: RecordBatch, policy: ConflictPolicy, checkpoint: [UInt8], job: String) async throws
        -> WriteCounts
    {
        try await Contract.save(contract, batch, BatchOptions(policy: policy), job: job, checkpoint: checkpoint)
    }
}

/// The store contract's primitives, driven as the operations drive them.
enum Contract {
    /// One save of `store` that writes `batch` (made ready first, as an
    /// import does), then sets `checkpoint` for `job` if given.
    static func save<Store: StoreBackend>(
        _ store: Store, _ batch: RecordBatch, _ options: BatchOptions, job: String? = nil,
        checkpoint: [UInt8]? = nil
    ) async throws -> WriteCounts {
        let prepared = try store.prepare(batch, options)
        return try await store.withSave(author: "test", job: job) { save in
            let counts = try await save.write(prepared)
            if let job, let checkpoint { try await save.setCheckpoint(job: job, data: checkpoint) }
            return counts
        }.value
    }
}

final class SQLiteBackend: Backend {
    let name = "sqlite"
    let folder: URL
    let store: Store
    var contract: any StoreBackend { store }

    /// - Parameter bulkUpdates: off, a batch update writes record by record
    ///   (``StoreConfiguration/bulkUpdates``): the path the bulk one must agree with.
    init(entities: [EntitySchema], folder: URL? = nil, pruneStep: Int? = nil, bulkUpdates: Bool = true) async throws {
        self.folder =
            try folder
            ?? {
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "depot-pgtest-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                return folder
            }()
        var configuration = StoreConfiguration(
            name: "travel", path: self.folder.appendingPathComponent("s.sqlite").path,
            entities: entities)
        if let pruneStep { configuration.historyPruneStep = pruneStep }
        configuration.bulkUpdates = bulkUpdates
        store = try await Store.open(configuration)
    }

    func checkpoint(job: String) async throws -> [UInt8]? { try await store.checkpoint(job: job) }

    func records(_ entity: String) async throws -> [[Value]] {
        let e = try store.reader.entity(entity)
        return try await store.reader.fetch(
            FetchDescriptor(entity: entity, sort: e.identifier.map { SortDescriptor($0) })
        ).rows
    }

    func history() async throws -> [HistoryTransaction] { try await store.reader.history(limit: 10_000) }
    func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet { try await store.reader.fetch(descriptor) }
    func count(_ descriptor: FetchDescriptor) async throws -> Int { try await store.reader.count(descriptor) }
    func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier] {
        try await store.reader.identifiers(descriptor)
    }

    func importFile(_ request: ImportRequest, cancelAfter: Int?) async throws -> ImportProgress {
        let store = store
        return try await cancelling(after: cancelAfter) { try await Importer.run(request, into: store, progress: $0) }
    }

    func indexes(_ entity: String) async throws -> [[String]] {
        let queue = try DatabaseQueue(path: folder.appendingPathComponent("s.sqlite").path)
        return try await queue.read { db in
            // An entity's table is named as the entity; an index of SQLite's own (a UNIQUE) has no sql.
            let names = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'index' "
                    + "AND tbl_name = ? AND sql IS NOT NULL", arguments: [entity])
            return try names.map { name in
                try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [name])
            }.sorted { $0.lexicographicallyPrecedes($1) }
        }
    }

    func tables() async throws -> [String] {
        let queue = try DatabaseQueue(path: folder.appendingPathComponent("s.sqlite").path)
        return try await queue.read { db in
            try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'depot\\_%' ESCAPE '\\' "
                    + "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
        }
    }

    func reopen(entities: [EntitySchema]) async throws -> any Backend {
        try await store.close()
        return try await SQLiteBackend(entities: entities, folder: folder)
    }

    func close() async {
        try? await store.close()
        try? FileManager.default.removeItem(at: folder)
    }
}

final class PostgresBackend: Backend {
    let name = "postgresql"
    let store: PostgresStore
    var contract: any StoreBackend { store }
    let schema: String

    /// A store in a schema of its own, dropped by ``close()``.
    init(entities: [EntitySchema], schema: String? = nil, pruneStep: Int? = nil, host: String? = nil) async throws {
        let schema = schema ?? "t_" + UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: "")
        self.schema = schema
        let location = try PostgresLocation(url: TestServer.url ?? "postgresql://postgres@/depot", schema: schema)
        var configuration = PostgresStoreConfiguration(name: "travel", location: location, entities: entities)
        if let pruneStep { configuration.historyPruneStep = pruneStep }
        if let host { configuration.host = host }
        store = try await PostgresStore.open(configuration)
    }

    func checkpoint(job: String) async throws -> [UInt8]? { try await store.checkpoint(job: job) }

    func records(_ entity: String) async throws -> [[Value]] { try await store.records(entity) }

    func history() async throws -> [HistoryTransaction] { try await store.history(limit: 10_000) }
    func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet { try await store.reads.fetch(descriptor) }
    func count(_ descriptor: FetchDescriptor) async throws -> Int { try await store.reads.count(descriptor) }
    func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier] {
        try await store.reads.identifiers(descriptor)
    }

    func importFile(_ request: ImportRequest, cancelAfter: Int?) async throws -> ImportProgress {
        let store = store
        return try await cancelling(after: cancelAfter) {
            try await Importer.run(request, into: store, progress: $0)
        }
    }

    func indexes(_ entity: String) async throws -> [[String]] {
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        let sql =
            "SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM pg_index i "
            + "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace "
            + "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
            + "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            + "WHERE ns.nspname = \(literal(schema)) AND t.relname = \(literal(entity)) "
            + "AND NOT i.indisprimary GROUP BY i.indexrelid"
        let rows = try await store.read { try await PostgresSQL.textRows($0, sql, logger: store.logger) }
        return rows.map { ($0[0] ?? "").split(separator: ",").map(String.init) }.sorted {
            $0.lexicographicallyPrecedes($1)
        }
    }

    func tables() async throws -> [String] {
        let sql =
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = "
            + PostgresSQL.literal(schema) + " AND table_name NOT LIKE 'depot\\_%' ORDER BY table_name COLLATE \"C\""
        let rows = try await store.read { try await PostgresSQL.textRows($0, sql, logger: store.logger) }
        return rows.compactMap { $0[0] }
    }

    func reopen(entities: [EntitySchema]) async throws -> any Backend {
        await store.close()
        return try await PostgresBackend(entities: entities, schema: schema)
    }

    func close() async {
        await store.close()
        try? await PostgresStore.dropSchema(store.configuration.location)
    }
}

/// The backends a contract test runs on: SQLite always, PostgreSQL when
/// the test server is there.
enum Backends {
    static var names: [String] { TestServer.available ? ["sqlite", "postgresql"] : ["sqlite"] }

    /// A new store of backend `name`; `pruneStep`, its `historyPruneStep`.
    /// `sqliteRecordByRecord` names an SQLite store whose batch updates
    /// write record by record.
    static func open(_ name: String, entities: [EntitySchema], pruneStep: Int? = nil) async throws -> any Backend {
        switch name {
        case "sqlite": try await SQLiteBackend(entities: entities, pruneStep: pruneStep)
        case sqliteRecordByRecord: try await SQLiteBackend(entities: entities, pruneStep: pruneStep, bulkUpdates: false)
        default: try await PostgresBackend(entities: entities, pruneStep: pruneStep)
        }
    }

    static let sqliteRecordByRecord = "sqlite, updates record by record"

    /// `body`'s answer on a new store of each backend (closed after it), by
    /// backend name; `extra` names more (``sqliteRecordByRecord``).
    static func answers<T>(
        entities: [EntitySchema], pruneStep: Int? = nil, extra: [String] = [],
        _ body: (any Backend) async throws -> T
    ) async throws -> [(String, T)] {
        var answers: [(String, T)] = []
        for name in names + extra {
            let backend = try await open(name, entities: entities, pruneStep: pruneStep)
            do {
                answers.append((name, try await body(backend)))
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
        return answers
    }
}
