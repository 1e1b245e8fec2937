import DepotEngine
import DepotWire
import Foundation

extension StoreBackend {
    /// The daemon's jobs of this store, kept in the store so that they
    /// share its fate: typed records over the store's jobs table (its SQL
    /// written once, `Store/StoreBackend+Jobs.swift` of the engine).
    var jobs: StoredJobs { StoredJobs(backend: self) }
}

/// A store's job table, typed: the records are ``JobRecord``s, each
/// written whole with its state (the table's state column) at each change
/// of state, never in between (progress lives in the import's checkpoint).
struct StoredJobs: Sendable {
    let backend: any StoreBackend
    var store: String { backend.name }

    /// A stored record that does not decode: the record standing for it
    /// (failed, never run; nil when not even its kind reads), and why.
    struct Unreadable: Error {
        var stub: JobRecord?
        var error: any Error
    }

    /// How often a host looks for jobs it may take over; nil when only
    /// this host serves the store.
    var pollInterval: Duration? { backend.jobPollInterval }

    /// Every job, oldest first.
    func all() async throws -> [(id: String, record: Result<JobRecord, Unreadable>)] {
        try await backend.jobs().map { ($0.id, Self.read($0.record, id: $0.id, store: store)) }
    }

    /// The jobs no live host holds (queued ones, and running ones whose
    /// host's lease lapsed); none on a store only this host serves.
    func claimable() async throws -> [(id: String, record: Result<JobRecord, Unreadable>)] {
        try await backend.claimableJobs().map { ($0.id, Self.read($0.record, id: $0.id, store: store)) }
    }

    /// Job `id`'s record, or why it does not read back; nil when there is none.
    func read(_ id: String) async throws -> Result<JobRecord, Unreadable>? {
        try await backend.job(id).map { Self.read($0, id: id, store: store) }
    }

    /// Job `id`'s record; nil when there is none or it does not read back.
    func record(_ id: String) async throws -> JobRecord? {
        try? await read(id)?.get()
    }

    /// Writes `record` and its state (see ``StoreBackend/putJob(id:state:record:)``);
    /// false when another host holds the job, or it had ended.
    @discardableResult
    func put(_ record: JobRecord) async throws -> Bool {
        try await backend.putJob(
            id: record.id, state: record.state.rawValue, record: Array(JSONEncoder().encode(record)))
    }

    /// Runs job `id`'s work once this host holds it (``StoreBackend/runJob(_:_:)``).
    func run<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await backend.runJob(id, body)
    }

    /// Asks the host running job `id` to cancel it (``StoreBackend/requestCancel(_:)``).
    func requestCancel(_ id: String) async throws -> Bool { try await backend.requestCancel(id) }

    /// The job that imported a file of this content hash, if one did.
    func importedFile(hash: String) async throws -> String? { try await backend.importedFile(hash: hash) }

    /// Records that `job` imported a file of this content hash.
    func recordImportedFile(hash: String, path: String, job: String) async throws {
        try await backend.recordImportedFile(hash: hash, path: path, job: job)
    }

    private static func read(_ bytes: [UInt8], id: String, store: String) -> Result<JobRecord, Unreadable> {
        do {
            return .success(try JSONDecoder().decode(JobRecord.self, from: Data(bytes)))
        } catch {
            return .failure(Unreadable(stub: JobRecord(unreadable: bytes, id: id, store: store), error: error))
        }
    }
}
