import Foundation
import GRDB

/// The records a service keeps with a store: its jobs (in submission order)
/// and the content hashes of the files it imported, in the store's own file
/// (`depot_jobs`, `depot_imported_files`), so that they share its fate.
extension Store: JobTable {
    /// Only this host serves an SQLite store: no other host's jobs to take over.
    public nonisolated var jobPollInterval: Duration? { nil }
    /// Only this host serves an SQLite store: none to take over.
    public nonisolated func claimableJobs() async throws -> [(id: String, record: [UInt8])] { [] }
    /// Only this host serves an SQLite store: its jobs stop here.
    public nonisolated func requestCancel(_ id: String) async throws -> Bool { false }

    /// Only this host serves an SQLite store: the job runs at once.
    public nonisolated func runJob<T: Sendable>(_ id: String, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T?
    {
        try await body()
    }

    /// The write connection's `PRAGMA synchronous`, as the store's commits
    /// run under it: 2 (FULL) or 1 (NORMAL), from ``StoreConfiguration/durability``.
    public func writerSynchronous() async throws -> Int {
        try await pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Creates or replaces the record of job `id` (opaque bytes, usually JSON) and its state.
    public func putJob(id: String, state: String, record: [UInt8]) async throws {
        do {
            try await pool.write { db in
                try db.execute(
                    sql: "INSERT INTO depot_jobs(id, state, record) VALUES (?, ?, ?) "
                        + "ON CONFLICT(id) DO UPDATE SET state = excluded.state, record = excluded.record",
                    arguments: [id, state, Data(record)])
            }
        } catch {
            // A full disk is the client's to know (507), as for any save.
            throw Store.translate(error, store: name)
        }
    }

    /// Every job record, oldest first.
    public nonisolated func jobs() async throws -> [(id: String, record: [UInt8])] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, record FROM depot_jobs ORDER BY seq").map {
                (id: $0["id"] as String, record: [UInt8]($0["record"] as Data))
            }
        }
    }

    /// The record of job `id`, if it has one.
    public nonisolated func job(_ id: String) async throws -> [UInt8]? {
        try await pool.read { db in
            try Data.fetchOne(db, sql: "SELECT record FROM depot_jobs WHERE id = ?", arguments: [id]).map {
                [UInt8]($0)
            }
        }
    }

    /// The job that imported content with this hash, if any.
    public nonisolated func importedFile(hash: String) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(db, sql: "SELECT job FROM depot_imported_files WHERE hash = ?", arguments: [hash])
        }
    }

    /// Remembers that content with this hash was imported by `job`.
    public func recordImportedFile(hash: String, path: String, job: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO depot_imported_files(hash, path, job, imported) VALUES (?, ?, ?, ?) "
                    + "ON CONFLICT(hash) DO NOTHING", arguments: [hash, path, job, Timestamp.now()])
        }
    }
}
