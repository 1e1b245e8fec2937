import DepotEngine
import Synchronization

/// The record counts of `GET /v1/stores` (the console's first page), kept
/// while the store has had no commit since they were read: `count(*)` over
/// 4.9M trips took 300 ms of every visit of the stores page, on a store
/// that had not changed (issue #34).
///
/// The store's ``StoreReading/commitCount`` is read before the count: a
/// commit during it makes the next request count again, so a kept count is
/// never older than the store's last commit (on PostgreSQL, than the last
/// one this host heard of).
final class EntityCounts: Sendable {
    private struct Kept {
        var version: UInt64
        var counts: [String: Int]
    }

    /// By the store object: a store a reload opens again under the same
    /// name counts its commits from 0 again.
    private let kept = Mutex<[ObjectIdentifier: Kept]>([:])

    /// The number of records of `entity` in `store`.
    func count(_ entity: String, in store: any StoreBackend) async throws -> Int {
        let reads = store.reads
        let key = ObjectIdentifier(store as AnyObject)
        let version = reads.commitCount
        if let n = kept.withLock({ $0[key].flatMap { $0.version == version ? $0.counts[entity] : nil } }) {
            return n
        }
        let n = try await reads.count(FetchDescriptor(entity: entity))
        kept.withLock { all in
            if all[key]?.version != version { all[key] = Kept(version: version, counts: [:]) }
            all[key]?.counts[entity] = n
        }
        return n
    }
}
