import Foundation
import Synchronization

/// The identifiers an import job has given so far, as a Bloom filter: a
/// key it never gave answers "no" for certain, one it gave "maybe".
///
/// A PostgreSQL store's import looks up in the store only the rows whose
/// key the job may have written before; the others go straight into the entity's
/// table as new records, under a savepoint, and the table's key is the
/// judge: a key stored before the job (or by another writer meanwhile)
/// fails that COPY, which is rolled back and done again with every key
/// looked up (PostgresSaveContext). After such a failure the job stops
/// guessing (``conflicted``): its file overlaps the store.
///
/// Hand-written: none of the packages this project may use has a Bloom
/// filter, and this one is a few lines on a zeroed allocation.
package final class SourceKeys: Sendable {
    /// 2^27 bits (16 MiB, from `calloc`: pages the job never touches cost
    /// nothing). With three probes a key, a key never given comes out
    /// "maybe" about once in 100,000 after a million keys, once in 125
    /// after ten million; a "maybe" costs only its lookup, so a job of
    /// hundreds of millions of rows, where most answers are "maybe", looks
    /// most keys up, as every import did before.
    private static let bits = 1 << 27
    private let words: Mutex<UnsafeMutablePointer<UInt64>>
    private let conflictedFlag = Atomic<Bool>(false)

    package init() {
        let memory = calloc(Self.bits / 64, MemoryLayout<UInt64>.size)!
        words = Mutex(memory.bindMemory(to: UInt64.self, capacity: Self.bits / 64))
    }

    deinit {
        words.withLock { free($0) }
    }

    /// Whether a COPY of keys this filter called new met a stored record.
    package var conflicted: Bool { conflictedFlag.load(ordering: .relaxed) }

    package func markConflicted() { conflictedFlag.store(true, ordering: .relaxed) }

    /// The three bit positions of `key`: double hashing of one 64-bit hash
    /// (Swift's hasher, seeded per process: the filter lives in one job's memory).
    private static func positions(_ key: String) -> (Int, Int, Int) {
        let hash = UInt64(bitPattern: Int64(key.hashValue))
        let a = hash, b = (hash >> 32) | (hash << 32) | 1
        let mask = UInt64(bits - 1)
        return (Int(a & mask), Int((a &+ b) & mask), Int((a &+ 2 &* b) & mask))
    }

    /// For each key, whether the job may have given it before (a key twice
    /// in `keys`: the second time), adding each.
    package func check(_ keys: [String]) -> [Bool] {
        words.withLock { words in
            keys.map { key in
                let (p, q, r) = Self.positions(key)
                let seen =
                    words[p >> 6] & (1 << UInt64(p & 63)) != 0 && words[q >> 6] & (1 << UInt64(q & 63)) != 0
                    && words[r >> 6] & (1 << UInt64(r & 63)) != 0
                words[p >> 6] |= 1 << UInt64(p & 63)
                words[q >> 6] |= 1 << UInt64(q & 63)
                words[r >> 6] |= 1 << UInt64(r & 63)
                return seen
            }
        }
    }
}
