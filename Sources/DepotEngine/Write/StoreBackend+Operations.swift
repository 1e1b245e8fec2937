import DepotWire

/// The write operations of every store, written once over the primitives
/// of ``StoreBackend`` and ``WriteContext``.
extension StoreBackend {
    /// The store's name, as in the configuration.
    public var name: String { settings.name }
    /// Where the store lives, for people: a file's path, or a server and schema.
    public var location: String { settings.location }
    /// How long history is kept (DESIGN §5), nil for ever.
    public var historyRetention: Duration? { settings.historyRetention }

    /// Runs an import job to its end, resuming from its checkpoint
    /// (``Importer/run(_:into:progress:)``).
    public func importFile(_ request: ImportRequest, progress: @escaping @Sendable (ImportProgress) -> Void)
        async throws -> ImportProgress
    {
        try await Importer.run(request, into: self, progress: progress)
    }

    // MARK: - Batch deletes and updates

    /// Deletes the records a predicate selects, in saves of at most
    /// `batchSize` records, logging a tombstone for each and applying the
    /// delete rules of what refers to them (DESIGN §12).
    ///
    /// A cancelled task stops after its current save: what was saved stays
    /// saved and logged, and `CancellationError` is thrown. Running it again
    /// finishes the work.
    ///
    /// ```swift
    /// let counts = try await store.delete(entity: "Trip", where: "endDate < \"2020-01-01\"", author: "cleanup")
    /// ```
    ///
    /// - Parameter progress: called after each save with the counts so far.
    /// - Throws: ``DepotError`` for an unknown entity or a bad predicate.
    @discardableResult
    public func delete(
        entity name: String, where predicate: String?, arguments: [String: Value] = [:],
        author: String, job: String? = nil, batchSize: Int? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let selection = try matching(name, predicate, arguments)
        return try await deleteAll(selection, author: author, job: job, batchSize: batchSize, progress: progress)
    }

    /// Deletes all records but one of each group that shares the values of
    /// `fields`: the first stored (`keepFirst`) or the last, in the
    /// backend's order. Records with null in any of `fields` are never
    /// duplicates. The deletes are logged like any other.
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field.
    @discardableResult
    public func resolveDuplicates(
        entity name: String, by fields: [String], keep: DuplicateResolution,
        where predicate: String? = nil, arguments: [String: Value] = [:],
        author: String, job: String? = nil, batchSize: Int? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let schema = settings.schema
        let query = try DuplicateQuery(
            entity: schema.entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments,
            dialect: settings.dialect)
        return try await deleteAll(
            RowSelection(query.entity, .redundant(query, keep: keep), in: schema), author: author, job: job,
            batchSize: batchSize, progress: progress)
    }

    /// Sets fields to values (`set`) and to values computed from each record
    /// (`compute`, expressions in NSExpression's syntax, DESIGN §17) on the
    /// records a predicate selects, in saves of at most `batchSize` records.
    /// Records that already hold the values are `unchanged` and not logged;
    /// a record whose computed value its field cannot hold is rejected
    /// (listed in `rejectsPath` when given) and left as it is.
    ///
    /// A job's update (`job` given) keeps a checkpoint in each save: run
    /// again after a crash, it goes on after the last record saved, computes
    /// no record twice and gives `now()` the same time.
    ///
    /// ```swift
    /// try await store.update(entity: "Trip", where: "destination == \"Paris\"",
    ///                        set: ["isFavorite": true], compute: ["budget": "budget * 1.1"], author: "me")
    /// ```
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field, a value of the
    ///   wrong type, null in a required field, a change of the identifier,
    ///   or an expression that does not compile (its position in it).
    @discardableResult
    public func update(
        entity name: String, where predicate: String?, arguments: [String: Value] = [:],
        set values: [String: Value], compute: [String: String] = [:], author: String, job: String? = nil,
        batchSize: Int? = nil, rejectsPath: String? = nil, progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let schema = settings.schema
        let entity = try schema.entity(name)
        var resumed: UpdateCheckpoint?
        if let job, let bytes = try await checkpoint(job: job) { resumed = UpdateCheckpoint.decode(bytes) }
        var total = WriteCounts()
        if let resumed {
            total.counters = resumed.counters
            if resumed.done { return total }
        }
        let plan = try UpdatePlan(
            entity: entity, schema: schema, where: predicate, arguments: arguments, set: values, compute: compute,
            dialect: settings.dialect, now: resumed?.now)
        let rejects = try rejectsPath.map { try RejectsFile(path: $0, truncateTo: resumed?.rejectsLength ?? 0) }
        // A save takes at most `size` records and lasts about the save
        // interval, read a chunk at a time so that memory holds one chunk.
        let size = max(1, batchSize ?? settings.saveEvery)
        let chunk = min(size, 4_096)
        let interval = settings.saveInterval
        var cursor = resumed?.cursor(entity) ?? .start
        var more = true
        while more {
            try Task.checkCancellation()
            let after = cursor, before = total.counters
            let outcome = try await withSave(author: author, job: job) { save in
                let clock = ContinuousClock(), began = clock.now
                var counts = Counters()
                var (cursor, more, taken) = (after, true, 0)
                while more && taken < size && (taken == 0 || clock.now - began < interval) {
                    let limit = min(chunk, size - taken)
                    let done =
                        if let bulk = try await save.bulkUpdate(
                            plan.selection, assignments: plan.constants, computed: plan.computed, after: cursor,
                            limit: limit)
                        {
                            (counts: bulk.counts, cursor: bulk.cursor, more: bulk.more, rejects: [String]())
                        } else {
                            try await save.updateRows(
                                plan.selection, assignments: plan.constants, computed: plan.computed, after: cursor,
                                limit: limit)
                        }
                    try rejects?.append(done.rejects)
                    counts.add(done.counts.counters)
                    taken += done.counts.updated + done.counts.unchanged + done.counts.rejected
                    (cursor, more) = (done.cursor, done.more)
                }
                if let job {
                    var counters = before
                    counters.add(counts)
                    let checkpoint = UpdateCheckpoint(
                        cursor: cursor, counters: counters, rejectsLength: rejects?.length ?? 0, now: plan.now,
                        done: !more)
                    try await save.setCheckpoint(job: job, data: try checkpoint.encoded())
                }
                return (counts, cursor, more)
            }
            // The counts only: a long job's rejections are in its file, not in memory.
            total.counters.add(outcome.value.0)
            (cursor, more) = (outcome.value.1, outcome.value.2)
            progress?(total)
        }
        return total
    }

    /// The records of entity `name` that `predicate` matches, compiled in this store's dialect.
    private func matching(_ name: String, _ predicate: String?, _ arguments: [String: Value]) throws -> RowSelection {
        let schema = settings.schema
        let entity = try schema.entity(name)
        let filter = try PredicateCompiler.compile(
            predicate, entity: entity, schema: schema, arguments: arguments, dialect: settings.dialect)
        return RowSelection(entity, .matching(filter), in: schema)
    }

    /// Deletes the records of `selection`, a save at a time, until it gives none.
    private func deleteAll(
        _ selection: RowSelection, author: String, job: String?, batchSize: Int?,
        progress: (@Sendable (WriteCounts) -> Void)?
    ) async throws -> WriteCounts {
        let size = max(1, batchSize ?? settings.saveEvery)
        var total = WriteCounts()
        while true {
            try Task.checkCancellation()
            let outcome = try await withSave(author: author, job: job) { save in
                try await save.deleteRows(selection, limit: size)
            }
            // Cascades and nullified references count too: the counters
            // agree with the history (DESIGN §3).
            total.add(outcome.value.counts)
            progress?(total)
            if outcome.value.rows < size { return total }
        }
    }
}

/// The fields an update sets.
package enum Assignments {
    /// The positions and converted values of an update's `set`, by field name.
    ///
    /// - Throws: ``DepotError`` for no field, an unknown field, a value of
    ///   the wrong type, or a field of the identifier.
    package static func resolve(_ values: [String: Value], in entity: EntitySchema) throws -> [(Int, Value)] {
        guard !values.isEmpty else { throw DepotError(.invalidArgument, "an update needs at least one field to set") }
        var assignments: [(Int, Value)] = []
        for (fieldName, value) in values.sorted(by: { $0.key < $1.key }) {
            let field = try entity.field(named: fieldName)
            if entity.identifier.contains(fieldName) {
                throw DepotError(
                    .invalidArgument,
                    "field \(JSONText.quoted(fieldName)) is part of the identifier "
                        + "and cannot be updated; delete the record and import it under its new identifier")
            }
            assignments.append((entity.position(of: fieldName)!, try ValueConversion.convert(value, to: field)))
        }
        return assignments
    }
}
