import Foundation
import GRDB

/// How an SQLite store's jobs run: only this host serves it, so a job
/// runs at once and none is taken over (the jobs' SQL is written once,
/// `Store/StoreBackend+Jobs.swift`).
extension Store {
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
}
