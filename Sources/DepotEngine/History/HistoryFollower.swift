/// The history of a store as it grows: an `AsyncSequence` of transactions.
public struct HistoryFollower: AsyncSequence, Sendable {
    /// A transaction, or a part of one (``HistoryTransaction/continues``).
    public typealias Element = HistoryTransaction

    /// The changes a follower reads at a time: a larger transaction comes
    /// in parts, so that a follower holds a page's worth (issue #35).
    package static let pageChanges = 10_000

    /// Reads the page after a token; `caughtUp` when it follows a commit
    /// waited for (see ``Iterator``).
    let page: @Sendable (_ after: HistoryToken?, _ caughtUp: Bool) async throws -> [HistoryTransaction]
    /// The store's commits, heard from any host.
    let signal: CommitSignal
    let after: HistoryToken?

    /// A follower of a backend's history: `page` reads up to 100
    /// transactions after a token, `signal` says when a commit was heard.
    package init(
        after: HistoryToken?, signal: CommitSignal,
        page: @escaping @Sendable (_ after: HistoryToken?, _ caughtUp: Bool) async throws -> [HistoryTransaction]
    ) {
        self.after = after
        self.signal = signal
        self.page = page
    }

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(follower: self, last: after)
    }

    /// Fetches pages of transactions and waits for commits between them.
    public struct Iterator: AsyncIteratorProtocol {
        let follower: HistoryFollower
        var last: HistoryToken?
        var buffer: [HistoryTransaction] = []
        /// Whether the follower has read everything up to a commit it waited
        /// for: its next read is then a commit's few changes, shared with
        /// the other streams (``StoreReader/liveRead(_:)``). A follower
        /// catching up reads whole pages on its own, so that they do not
        /// hold up the others.
        var caughtUp = false

        /// The next transaction, waiting for one to commit; `nil` when the
        /// store closed or the task was cancelled.
        public mutating func next() async throws -> HistoryTransaction? {
            while buffer.isEmpty {
                if Task.isCancelled || follower.signal.isClosed { return nil }
                let version = follower.signal.version
                let page: [HistoryTransaction]
                do {
                    page = try await follower.page(last, caughtUp)
                } catch  where follower.signal.isClosed {
                    return nil  // the store closed under the read
                }
                if let newest = page.last {
                    buffer = page.reversed()
                    last = newest.token
                    if page.count == 100 || newest.continues { caughtUp = false }
                    break
                }
                guard await follower.signal.wait(after: version) else { return nil }
                caughtUp = true
            }
            return buffer.popLast()
        }
    }
}
