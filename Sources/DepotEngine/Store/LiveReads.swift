import GRDB
import Synchronization

/// The reads of live streams (history followers, live fetches with
/// changes), gathered into shared snapshots.
///
/// A commit wakes every stream of the store at once; each used to take a
/// reader connection and a transaction of its own, so that 100 streams made
/// 100 transactions, queued on a handful of connections, for every commit
/// (`bench/live-latency`). Here the reads that are waiting when a snapshot
/// begins run one after another in it: one transaction, one dispatch, for
/// all of them.
///
/// A read always runs in a snapshot that began after it was asked for (the
/// reads of a snapshot are taken before it is asked for), so it sees every
/// commit that happened before: a stream woken by a commit never reads an
/// older state. Reads asked for while a snapshot is in use
/// wait for the next one, which starts as soon as that one ends.
final class LiveReads: Sendable {
    private struct State {
        var waiting: [@Sendable (Result<Database, any Error>) -> Void] = []
        var running = false
    }
    private let state = Mutex(State())
    private let pool: DatabasePool

    init(pool: DatabasePool) { self.pool = pool }

    /// Runs `body` in a snapshot shared with the other reads waiting now.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            let start = state.withLock { s in
                s.waiting.append { database in
                    c.resume(with: Result { try body(database.get()) })
                }
                defer { s.running = true }
                return !s.running
            }
            if start { next() }
        }
    }

    /// Starts a snapshot for the reads waiting now, then the next one if
    /// more came meanwhile.
    ///
    /// The reads are taken before the snapshot is asked for: GRDB begins a
    /// read's snapshot before handing it the connection (its schema check
    /// reads the file), so reads taken inside it could have been asked
    /// after a commit the snapshot does not hold. A stream woken by that
    /// commit then read the state before it, and showed the change only
    /// at the next commit (found reading this code, 2026-11-29).
    private func next() {
        let reads = state.withLock { s in
            defer { s.waiting = [] }
            return s.waiting
        }
        pool.asyncRead { [self] database in
            for read in reads { read(database) }
            let more = state.withLock { s in
                if s.waiting.isEmpty { s.running = false }
                return s.running
            }
            if more { next() }
        }
    }
}
