extension StoreReader {
    /// The records a descriptor selects, in its order.
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field, a predicate
    ///   that does not parse or compares a field with a value of another type,
    ///   a negative limit or offset.
    public func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet {
        let query = try FetchQuery(descriptor, schema: schema)
        return try await read { db in try query.records(db) }
    }

    /// The records a descriptor selects, in its order, as one JSON array of
    /// objects: the text of ``fetch(_:)``'s ``RecordSet/jsonArray()``,
    /// written without building the records first.
    ///
    /// For example:
    ///
    /// ```swift
    /// let json = try await store.reader.fetchJSON(FetchDescriptor(entity: "Trip", limit: 2))
    /// // [{"id":"t1",...},{"id":"t2",...}]
    /// ```
    ///
    /// - Throws: as ``fetch(_:)``.
    public func fetchJSON(_ descriptor: FetchDescriptor) async throws -> String {
        String(decoding: try await fetchJSONBytes(descriptor), as: UTF8.self)
    }

    /// ``fetchJSON(_:)``'s text as UTF-8 bytes, for a caller that sends them
    /// on as they are.
    public func fetchJSONBytes(_ descriptor: FetchDescriptor) async throws -> [UInt8] {
        let query = try FetchQuery(descriptor, schema: schema)
        return try await read { db in try query.jsonArray(db) }
    }

    /// ``fetchJSONBytes(_:)`` handed to `write` a megabyte at a time, read
    /// on a connection of its own (``streamRead(_:)``), so that an answer of
    /// any size holds a chunk in memory and no reader of the pool (issue
    /// #35: 20 fetches of 100k records without a limit took 559 MB). A
    /// descriptor that embeds related records is written whole.
    public func fetchJSON(
        _ descriptor: FetchDescriptor,
        write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void
    ) async throws {
        let query = try FetchQuery(descriptor, schema: schema)
        guard query.prefetch.isEmpty else {
            let bytes = try await read { db in try query.jsonArray(db) }
            try bytes.withUnsafeBytes { try write($0) }
            return
        }
        try await streamRead { db in try query.jsonArray(db, write: write) }
    }

    /// The number of records a descriptor selects, without loading them
    /// (`fetchCount`); `limit` and `offset` apply.
    public func count(_ descriptor: FetchDescriptor) async throws -> Int {
        let query = try FetchQuery(descriptor, schema: schema)
        return try await read { db in try query.count(db) }
    }

    /// The identifiers of the records a descriptor selects, in its order
    /// (`fetchIdentifiers`).
    public func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier] {
        let query = try FetchQuery(descriptor, schema: schema)
        return try await read { db in try query.identifiers(db) }
    }

    /// Every record a descriptor's predicate selects, in batches, in storage
    /// order (`enumerate(batchSize:)`).
    ///
    /// Each batch is one short read that resumes after the last record's key,
    /// not at an offset, so a walk over millions of records keeps memory flat
    /// and never holds a read snapshot for long. Records committed meanwhile
    /// behind the walk's position are included. The descriptor's `sort`,
    /// `limit` and `offset` are not used.
    ///
    /// For example:
    ///
    /// ```swift
    /// for try await batch in store.reader.enumerate(FetchDescriptor(entity: "Trip"), batchSize: 5_000) {
    ///     total += batch.count
    /// }
    /// ```
    public func enumerate(_ descriptor: FetchDescriptor, batchSize: Int = 5_000) -> RecordBatches {
        RecordBatches(reader: self, descriptor: descriptor, batchSize: max(1, batchSize))
    }
}
