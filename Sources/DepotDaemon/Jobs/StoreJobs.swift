import DepotEngine
import DepotPostgres
import DepotWire
import Foundation

extension StoreBackend {
    /// The daemon's jobs of this store, kept in the store so that they
    /// share its fate: typed records over the backend's job table (one
    /// implementation per backend, chosen here, outside the store contract).
    var jobs: StoredJobs {
        let table: any JobTable =
            switch self {
            case let sqlite as Store: sqlite
            case let postgres as PostgresStore: postgres
            default: NoJobTable(store: name)
            }
        return StoredJobs(table: table, store: name)
    }
}

/// A store's job table, typed: the records are ``JobRecord``s, each
/// written whole with its state (the table's state column) at each change
/// of state, never in between (progress lives in the import's checkpoint).
struct StoredJobs: Sendable {
    let table: any JobTable
    let store: String

    /// A stored record that does not decode: the record standing for it
    /// (failed, never run; nil when not even its kind reads), and why.
    struct Unreadable: Error {
        var stub: JobRecord?
        var error: any Error
    }

    /// How often a host looks for jobs it may take over; nil when only
    /// this host serves the store.
    var pollInterval: Duration? { table.jobPollInterval }

    /// Every job, oldest first.
    func all() async throws -> [(id: String, record: Result<JobRecord, Unreadable>)] {
        try await table.jobs().map { ($0.id, Self.read($0.record, id: $0.id, store: store)) }
    }

    /// The jobs no live host holds (queued ones, and running ones whose
    /// host's lease lapsed); none on a store only this host serves.
    func claimable() async throws -> [(id: String, record: Result<JobRecord, Unreadable>)] {
        try await table.claimableJobs().map { ($0.id, Self.read($0.record, id: $0.id, store: store)) }
    }

    /// Job `id`'s record, or why it does not read back; nil when there is none.
    func read(_ id: String) async throws -> Result<JobRecord, Unreadable>? {
        try await table.job(id).map { Self.read($0, id: id, store: store) }
    }

    /// Job `id`'s record; nil when there is none or it does not read back.
    func record(_ id: String) async throws -> JobRecord? {
        try? await read(id)?.get()
    }

    /// Writes `record` and its state (see ``JobTable/putJob(id:state:record:)``).
    func put(_ record: JobRecord) async throws {
        try await table.putJob(id: record.id, state: record.state.rawValue, record: Array(JSONEncoder().encode(record)))
    }

    /// Runs job `id`'s work once this host holds it (``JobTable/runJob(_:_:)``).
    func run<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await table.runJob(id, body)
    }

    /// Asks the host running job `id` to cancel it (``JobTable/requestCancel(_:)``).
    func requestCancel(_ id: String) async throws -> Bool { try await table.requestCancel(id) }

    /// The job that imported a file of this content hash, if one did.
    func importedFile(hash: String) async throws -> String? { try await table.importedFile(hash: hash) }

    /// Records that `job` imported a file of this content hash.
    func recordImportedFile(hash: String, path: String, job: String) async throws {
        try await table.recordImportedFile(hash: hash, path: path, job: job)
    }

    private static func read(_ bytes: [UInt8], id: String, store: String) -> Result<JobRecord, Unreadable> {
        do {
            return .success(try JSONDecoder().decode(JobRecord.self, from: Data(bytes)))
        } catch {
            return .failure(Unreadable(stub: JobRecord(unreadable: bytes, id: id, store: store), error: error))
        }
    }
}

/// The job table of a backend the daemon does not know: it keeps nothing,
/// and says so.
private struct NoJobTable: JobTable {
    let store: String

    private var refusal: DepotError {
        DepotError(.invalidArgument, "store \(JSONText.quoted(store)) keeps no jobs: its backend has no job table")
    }
    func jobs() async throws -> [(id: String, record: [UInt8])] { [] }
    func putJob(id: String, state: String, record: [UInt8]) async throws { throw refusal }
    func job(_ id: String) async throws -> [UInt8]? { nil }
    var jobPollInterval: Duration? { nil }
    func claimableJobs() async throws -> [(id: String, record: [UInt8])] { [] }
    func runJob<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        throw refusal
    }
    func requestCancel(_ id: String) async throws -> Bool { false }
    func importedFile(hash: String) async throws -> String? { nil }
    func recordImportedFile(hash: String, path: String, job: String) async throws { throw refusal }
}
