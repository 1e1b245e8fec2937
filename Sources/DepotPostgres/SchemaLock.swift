import Synchronization

/// Runs this host's changes of a PostgreSQL store's schema one at a time,
/// each to its end: its transaction and the update of what the host serves
/// (``SchemaBox``). The advisory lock orders the transactions of every
/// host, but not this host's updates of its schema after their commits: a
/// reload heard from a `NOTIFY` that read the entities before a creation
/// committed could set its stale list after that creation (issue 51, seen
/// as an entity created here and gone from what this host served).
///
/// Written by hand: an async mutex whose waiters suspend (no thread is
/// blocked while a transaction awaits the server); none of the packages
/// here has one.
final class SchemaLock: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// `body`, once every change begun before it has ended.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.held {
                    s.waiters.append(continuation)
                    return false
                }
                s.held = true
                return true
            }
            if now { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.waiters.isEmpty else {
                s.held = false
                return nil
            }
            // Handed on: still held, by the first waiter.
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
