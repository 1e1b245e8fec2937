import GRDB

/// The history of a store as it grows: an `AsyncSequence` of transactions.
public struct HistoryFollower: AsyncSequence, Sendable {
    /// A transaction.
    public typealias Element = HistoryTransaction

    let reader: StoreReader
    let after: HistoryToken?
    let entity: String?
    let author: String?

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
                if Task.isCancelled || follower.reader.signal.isClosed { return nil }
                let version = follower.reader.signal.version
                let page: [HistoryTransaction]
                do {
                    let (reader, after, entity, author) = (follower.reader, last, follower.entity, follower.author)
                    let read: @Sendable (Database) throws -> [HistoryTransaction] = { db in
                        try HistoryQuery.transactions(db, store: reader.storeName, after: after, entity: entity,
                                                      author: author, limit: 100)
                    }
                    page = try await caughtUp ? reader.liveRead(read) : reader.read(read)
                } catch where follower.reader.signal.isClosed {
                    return nil  // the store closed under the read
                }
                if let newest = page.last {
                    buffer = page.reversed()
                    last = newest.token
                    if page.count == 100 { caughtUp = false }
                    break
                }
                guard await follower.reader.signal.wait(after: version) else { return nil }
                caughtUp = true
            }
            return buffer.popLast()
        }
    }
}
