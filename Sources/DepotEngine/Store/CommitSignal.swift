import Synchronization

/// Wakes the tasks that wait for the next committed save of a store.
///
/// The store bumps it after each commit that changed data; history followers
/// and live fetches wait on it instead of polling. A waiter reads ``version``
/// *before* it queries, then waits for a version past that one, so no commit
/// slips between the query and the wait.
package final class CommitSignal: Sendable {
    private struct State {
        var version: UInt64 = 0
        /// The newest history token a commit carried.
        var token: Int64 = 0
        /// Tokens of commits made here whose announcement (PostgreSQL's
        /// `NOTIFY`) will also be heard: counted once, not twice.
        var announced: Set<Int64> = []
        var closed = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    }

    private let state = Mutex(State())

    /// The number of commits seen so far.
    package init() {}

    package var version: UInt64 { state.withLock { $0.version } }

    /// Whether the store has closed.
    package var isClosed: Bool { state.withLock { $0.closed } }

    /// The newest history token a commit carried (`nil` before any).
    package var token: HistoryToken? { state.withLock { $0.token > 0 ? HistoryToken($0.token) : nil } }

    /// Records a commit (with its history token, when it has one) and
    /// wakes every waiter.
    package func bump(token: Int64? = nil) {
        let waiters = state.withLock { s in
            s.version += 1
            if let token { s.token = max(s.token, token) }
            defer { s.waiters = [:] }
            return s.waiters
        }
        for w in waiters.values { w.resume(returning: true) }
    }

    /// Says, before it commits, that a save made here will announce
    /// `token`: when ``heard(_:)`` hears it, it was counted already.
    package func announce(_ token: Int64) {
        state.withLock { s in
            // A save that failed after announcing is never heard: a bound
            // keeps those few from adding up.
            if s.announced.count >= 4096 { s.announced.removeAll() }
            s.announced.insert(token)
        }
    }

    /// A commit announced by any host (`nil`: one that may have been
    /// missed): counted unless this host announced it (``announce(_:)``).
    package func heard(_ token: Int64?) {
        let own = token.map { t in state.withLock { $0.announced.remove(t) != nil } } ?? false
        if !own { bump(token: token) }
    }

    /// Wakes every waiter for good: the store is closing.
    package func close() {
        let waiters = state.withLock { s in
            s.closed = true
            defer { s.waiters = [:] }
            return s.waiters
        }
        for w in waiters.values { w.resume(returning: false) }
    }

    /// Waits until a commit past `version` happens.
    ///
    /// - Returns: `false` when the store closed or the task was cancelled.
    package func wait(after version: UInt64) async -> Bool {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let immediate: Bool? = state.withLock { s in
                    if s.closed || Task.isCancelled { return false }
                    if s.version > version { return true }
                    s.waiters[id] = c
                    return nil
                }
                if let immediate { c.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: false)
        }
    }
}
