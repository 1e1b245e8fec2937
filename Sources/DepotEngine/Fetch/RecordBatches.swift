
/// Batches of records, read by key: see ``StoreReader/enumerate(_:batchSize:)``.
public struct RecordBatches: AsyncSequence, Sendable {
    /// A batch of records.
    public typealias Element = RecordSet

    let reader: StoreReader
    let descriptor: FetchDescriptor
    let batchSize: Int

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator { Iterator(batches: self) }

    /// Reads one batch per call.
    public struct Iterator: AsyncIteratorProtocol {
        let batches: RecordBatches
        var after: Int64 = 0
        var done = false
        var query: FetchQuery?

        /// The next batch, or `nil` after the last record.
        public mutating func next() async throws -> RecordSet? {
            guard !done else { return nil }
            try Task.checkCancellation()
            if query == nil {
                var d = batches.descriptor
                d.sort = []
                d.limit = nil
                d.offset = nil
                d.sectionBy = nil
                query = try FetchQuery(d, schema: batches.reader.schema)
            }
            let q = query!, after = after, size = batches.batchSize
            let (records, last) = try await batches.reader.read { db in try q.page(db, after: after, limit: size) }
            if records.rows.count < size { done = true }
            guard let last, !records.rows.isEmpty else { return nil }
            self.after = last
            return records
        }
    }
}
