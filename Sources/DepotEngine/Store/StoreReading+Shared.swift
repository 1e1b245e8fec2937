/// The reads that every backend does alike, written once over its schema,
/// its dialect, its commits and its system tables' rows.
extension StoreReading {
    /// The store's entities: the configuration's, in its order, then those
    /// created over the API.
    package var entities: [EntitySchema] { schema.entities }

    /// The names of the entities created over the API (DESIGN §18).
    package var entitiesCreatedByAPI: Set<String> { schema.createdByAPI }

    /// The entity called `name`.
    ///
    /// - Throws: ``DepotError/Code/unknownEntity`` with the closest name as a hint.
    package func entity(_ name: String) throws -> EntitySchema { try schema.entity(name) }

    /// Checks a descriptor without running it: its entity, fields, sort, and
    /// predicate with its arguments, as a fetch would.
    ///
    /// For example, to refuse a batch job's predicate before queueing it:
    ///
    /// ```swift
    /// try store.reads.check(FetchDescriptor(entity: "Trip", where: "budget >"))   // throws, position 9
    /// ```
    ///
    /// - Throws: the ``DepotError`` that ``fetch(_:)`` would throw for it.
    package func check(_ descriptor: FetchDescriptor) throws {
        _ = try FetchQuery(descriptor, schema: schema, dialect: dialect)
    }

    /// The records a descriptor selects, grouped by its `sectionBy` field.
    ///
    /// - Throws: as ``fetch(_:)``, and ``DepotError/Code/invalidArgument``
    ///   without `sectionBy`.
    package func fetchSections(_ descriptor: FetchDescriptor) async throws -> [RecordSection] {
        guard let field = descriptor.sectionBy else {
            throw DepotError(.invalidArgument, "a sectioned fetch needs section_by")
        }
        // Runs of rows with one key, each with its embedded records.
        return try await fetch(descriptor).sections(by: field)
    }

    /// Checks a batch update without running it: its entity, its predicate,
    /// the values of `set`, each converted to its field's type, and the
    /// expressions of `compute`, type-checked against their fields.
    ///
    /// ```swift
    /// try store.reads.checkUpdate(entity: "Trip", where: "destination == \"Rome\"", set: ["budget": "a lot"])
    /// // throws typeMismatch: field "budget" is double
    /// ```
    ///
    /// - Throws: the ``DepotError`` that ``StoreBackend/update(entity:where:arguments:set:compute:author:job:batchSize:rejectsPath:progress:)``
    ///   would throw before writing anything.
    package func checkUpdate(
        entity name: String, where predicate: String?, arguments: [String: Value] = [:],
        set values: [String: Value], compute: [String: String] = [:]
    ) throws {
        _ = try UpdatePlan(
            entity: entity(name), schema: schema, where: predicate, arguments: arguments, set: values,
            compute: compute, dialect: dialect)
    }

    /// Checks a duplicate resolution or listing without running it: its
    /// entity, fields, predicate and limit.
    ///
    /// - Throws: the ``DepotError`` that ``StoreBackend/resolveDuplicates(entity:by:keep:where:arguments:author:job:batchSize:progress:)``
    ///   would throw before writing anything.
    package func checkDuplicates(
        entity name: String, by fields: [String], where predicate: String?, arguments: [String: Value] = [:],
        limit: Int? = nil
    ) throws {
        _ = try DuplicateQuery(
            entity: entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments,
            dialect: dialect)
        if let limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
    }

    // MARK: - Commits and history

    /// The number of the store's commits heard so far, from any host; live
    /// reads compare it to know when to run again.
    package var commitCount: UInt64 { signal.version }

    /// Waits for a commit after ``commitCount`` was `version`.
    ///
    /// - Returns: false when the store closed or the task was cancelled.
    package func waitForCommit(after version: UInt64) async -> Bool { await signal.wait(after: version) }

    /// The token of the newest history transaction kept, nil when there is none.
    package func latestToken() async throws -> HistoryToken? {
        try await rows("SELECT max(id) FROM \(table: "depot_transactions")").first?.first?.integer
            .map(HistoryToken.init)
    }

    /// The tokens of the history transactions saved by job `job`, oldest first.
    package func transactions(ofJob job: String) async throws -> [HistoryToken] {
        try await rows("SELECT id FROM \(table: "depot_transactions") WHERE job = \(bind: job) ORDER BY id")
            .compactMap { $0[0].integer.map(HistoryToken.init) }
    }

    /// The consumer called `name`, with its lag.
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``, naming the others.
    package func consumer(_ name: String) async throws -> Consumer {
        try await ConsumerStatements.consumer(name, store: schema.name, rows: rows)
    }

    /// The transactions after consumer `name`'s token, oldest first; reading
    /// does not move the token (``StoreBackend/acknowledge(consumer:token:)`` does).
    ///
    /// - Throws: ``DepotError/Code/unknownConsumer``;
    ///   ``DepotError/Code/historyExpired`` naming a lost consumer.
    package func history(
        consumer name: String, entity: String? = nil, author: String? = nil, limit: Int = 100,
        maxChanges: Int = .max
    ) async throws -> [HistoryTransaction] {
        if let entity { _ = try schema.entity(entity) }
        guard limit > 0 else { throw DepotError(.invalidArgument, "limit must be at least 1") }
        let consumer = try await self.consumer(name)
        if consumer.state == .lost { throw HistoryErrors.lost(consumer: name, store: schema.name) }
        return try await history(
            after: consumer.token, entity: entity, author: author, limit: limit, maxChanges: maxChanges)
    }
}
