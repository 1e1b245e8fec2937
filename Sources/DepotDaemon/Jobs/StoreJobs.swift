import DepotEngine
import DepotPostgres

extension StoreBackend {
    /// The daemon's job table of this store, kept in the store so that the
    /// jobs share its fate: one implementation per backend, chosen here,
    /// outside the store contract.
    var jobTable: any JobTable {
        switch self {
        case let sqlite as Store: sqlite
        case let postgres as PostgresStore: postgres
        default: NoJobTable(store: name)
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
