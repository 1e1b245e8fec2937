
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

        /// The next transaction, waiting for one to commit; `nil` when the
        /// store closed or the task was cancelled.
        public mutating func next() async throws -> HistoryTransaction? {
            while buffer.isEmpty {
                if Task.isCancelled || follower.reader.signal.isClosed { return nil }
                let version = follower.reader.signal.version
                let page: [HistoryTransaction]
                do {
                    // With the other streams woken by the same commit, in one snapshot.
                    let (reader, after, entity, author) = (follower.reader, last, follower.entity, follower.author)
                    page = try await reader.liveRead { db in
                        try HistoryQuery.transactions(db, store: reader.storeName, after: after, entity: entity,
                                                      author: author, limit: 100)
                    }
                } catch where follower.reader.signal.isClosed {
                    return nil  // the store closed under the read
                }
                if let newest = page.last {
                    buffer = page.reversed()
                    last = newest.token
                    break
                }
                guard await follower.reader.signal.wait(after: version) else { return nil }
            }
            return buffer.popLast()
        }
    }
}
