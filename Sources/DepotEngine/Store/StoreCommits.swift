/// A store's commits after a version, as a live fetch waits for them: each
/// element is the ``StoreReading/commitCount`` once a commit came, those
/// that came while the last element was used coalesced into the next one.
/// It ends when the store closes or the task is cancelled.
///
/// For example, a fetch read again at each commit:
///
/// ```swift
/// var version = store.reads.commitCount
/// var result = try await store.reads.count(descriptor)
/// for await _ in store.reads.commits(after: version) {
///     result = try await store.reads.count(descriptor)
/// }
/// ```
public struct StoreCommits: AsyncSequence, Sendable {
    public typealias Element = UInt64

    let reads: any StoreReading
    let version: UInt64

    public struct AsyncIterator: AsyncIteratorProtocol {
        let reads: any StoreReading
        var version: UInt64

        /// The commit count after the next commit; `nil` once the store
        /// closed or the task was cancelled.
        public mutating func next() async -> UInt64? {
            guard await reads.waitForCommit(after: version) else { return nil }
            version = reads.commitCount
            return version
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reads: reads, version: version) }
}

extension StoreReading {
    /// The commits after ``commitCount`` was `version` (read it before
    /// the first read of the store, so that no commit falls between).
    public func commits(after version: UInt64) -> StoreCommits { StoreCommits(reads: self, version: version) }
}
