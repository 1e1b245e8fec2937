/// Batches of records, read by key: see ``StoreReading/enumerate(_:batchSize:)``.
public struct RecordBatches: AsyncSequence, Sendable {
    /// A batch of records.
    public typealias Element = RecordSet

    /// Reads the batch after a key (nil: from the first record): the
    /// records and the last one's key (the values of its key's columns).
    let page: @Sendable (_ after: [Value]?, _ size: Int) async throws -> (RecordSet, [Value]?)
    let batchSize: Int

    /// Batches read by `page`, `batchSize` records at a time.
    package init(
        batchSize: Int,
        page: @escaping @Sendable (_ after: [Value]?, _ size: Int) async throws -> (RecordSet, [Value]?)
    ) {
        self.batchSize = batchSize
        self.page = page
    }

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator { Iterator(batches: self) }

    /// Reads one batch per call.
    public struct Iterator: AsyncIteratorProtocol {
        let batches: RecordBatches
        var after: [Value]? = nil
        var done = false

        /// The next batch, or `nil` after the last record.
        public mutating func next() async throws -> RecordSet? {
            guard !done else { return nil }
            try Task.checkCancellation()
            let (records, last) = try await batches.page(after, batches.batchSize)
            if records.rows.count < batches.batchSize { done = true }
            guard let last, !records.rows.isEmpty else { return nil }
            self.after = last
            return records
        }
    }
}
