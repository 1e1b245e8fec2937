/// Batches of records, read by key: see ``StoreReader/enumerate(_:batchSize:)``.
public struct RecordBatches: AsyncSequence, Sendable {
    /// A batch of records.
    public typealias Element = RecordSet

    /// Reads the batch after a key: the records and the last one's key.
    let page: @Sendable (_ after: Int64, _ size: Int) async throws -> (RecordSet, Int64?)
    let batchSize: Int

    /// Batches read by `page`, `batchSize` records at a time; a backend's
    /// own paging (``StoreReading/enumerate(_:batchSize:)``).
    package init(
        batchSize: Int, page: @escaping @Sendable (_ after: Int64, _ size: Int) async throws -> (RecordSet, Int64?)
    ) {
        self.batchSize = batchSize
        self.page = page
    }

    /// Batches of `descriptor`'s records from an SQLite store, by rowid.
    init(reader: StoreReader, descriptor: FetchDescriptor, batchSize: Int) {
        let unsorted = descriptor.wholeSelection
        self.init(batchSize: batchSize) { after, size in
            let q = try FetchQuery(unsorted, schema: reader.schema)
            return try await reader.read { db in try q.page(db, after: after, limit: size) }
        }
    }

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator { Iterator(batches: self) }

    /// Reads one batch per call.
    public struct Iterator: AsyncIteratorProtocol {
        let batches: RecordBatches
        var after: Int64 = 0
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
