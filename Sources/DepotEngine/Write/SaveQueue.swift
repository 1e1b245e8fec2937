import Synchronization

/// Group commit (DESIGN §16): the saves of one store that arrive while
/// another is being written share the next commit, and so its sync.
///
/// The first save to find the queue idle leads: it writes every save
/// waiting, as one ``StoreBackend/saveAll(_:)`` (each its own savepoint,
/// history transaction and token, in the order they came), answers them
/// once the commit is on disk, and goes on with those that came meanwhile,
/// until none wait. A save waits at most for the group being written, and
/// that for the store's writer: the current save of a running job, never
/// the whole job.
///
/// For example:
///
/// ```swift
/// let saves = SaveQueue(store)
/// let reply = try await saves.save(SaveRequest(changeSet, author: "web"))
/// print(reply.result?.token ?? "nothing changed")
/// ```
public final class SaveQueue: Sendable {
    private let backend: any StoreBackend
    /// The most changes a group holds (past it, the next group takes the rest).
    private let maxChanges: Int

    private struct Waiting: Sendable {
        var request: SaveRequest
        var reply: CheckedContinuation<SaveReply, any Error>
    }

    private struct State: Sendable {
        var waiting: [Waiting] = []
        var leading = false
    }

    private let state = Mutex(State())

    package init(_ backend: any StoreBackend, maxChanges: Int = 20_000) {
        self.backend = backend
        self.maxChanges = maxChanges
    }

    /// Applies `request` in the next group's commit; its reply, once the commit is on disk.
    ///
    /// - Throws: as ``StoreBackend/saveAll(_:)``'s result for this save.
    public func save(_ request: SaveRequest) async throws -> SaveReply {
        try await withCheckedThrowingContinuation { reply in
            let lead = state.withLock { state -> Bool in
                state.waiting.append(Waiting(request: request, reply: reply))
                guard !state.leading else { return false }
                state.leading = true
                return true
            }
            // On the leader's thread: it writes group after group with no
            // wait for a turn on the cooperative pool (LeaderThread).
            if lead { Task(executorPreference: LeaderThread.shared) { await self.lead() } }
        }
    }

    /// How many saves wait for the next group, and whether a group is
    /// being written (for tests).
    package var load: (waiting: Int, leading: Bool) { state.withLock { ($0.waiting.count, $0.leading) } }

    /// Writes groups until no save waits.
    private func lead() async {
        while true {
            let group = state.withLock { state -> [Waiting] in
                var changes = 0
                var taken = 0
                for w in state.waiting {
                    changes += w.request.changeSet.changes.count
                    if taken > 0, changes > maxChanges { break }
                    taken += 1
                }
                let group = Array(state.waiting.prefix(taken))
                state.waiting.removeFirst(taken)
                if group.isEmpty { state.leading = false }
                return group
            }
            if group.isEmpty { return }
            do {
                let results = try await backend.saveAll(group.map(\.request))
                for (w, result) in zip(group, results) { w.reply.resume(with: result) }
            } catch {
                for w in group { w.reply.resume(throwing: error) }
            }
        }
    }
}
