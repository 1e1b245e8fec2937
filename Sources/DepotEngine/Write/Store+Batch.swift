import GRDB

extension Store {
    /// Deletes the records a predicate selects, in saves of at most
    /// `batchSize` records, logging a tombstone for each.
    ///
    /// A cancelled task stops after its current save: what was saved stays
    /// saved and logged, and `CancellationError` is thrown. Running it again
    /// finishes the work.
    ///
    /// For example:
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
        let entity = try schema.entity(name)
        let filter = try PredicateCompiler.compile(predicate, entity: entity, schema: schema, arguments: arguments)
        let select = SQLFragment(
            sql: "SELECT rowid FROM \(entity.table) WHERE \(filter.sql) ORDER BY rowid",
            arguments: filter.arguments)
        return try await deleteLoop(
            entity, select: select, author: author, job: job,
            batchSize: batchSize, progress: progress)
    }

    /// Sets fields to values on the records a predicate selects, in saves of
    /// at most `batchSize` records. Records that already hold the values are
    /// `unchanged` and not logged.
    ///
    /// For example:
    ///
    /// ```swift
    /// try await store.update(entity: "Trip", where: "destination == \"Paris\"",
    ///                        set: ["isFavorite": true], author: "me")
    /// ```
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field, a value of the
    ///   wrong type, null in a required field, or a change of the identifier.
    @discardableResult
    public func update(
        entity name: String, where predicate: String?, arguments: [String: Value] = [:],
        set values: [String: Value], author: String, job: String? = nil, batchSize: Int? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let entity = try schema.entity(name)
        let filter = try PredicateCompiler.compile(predicate, entity: entity, schema: schema, arguments: arguments)
        let assignments = try Self.assignments(values, in: entity)
        let size = batchSize ?? configuration.saveEvery
        var total = WriteCounts()
        var after: Int64 = 0
        var more = true
        while more {
            try Task.checkCancellation()
            let last = after
            let frozen = assignments
            let outcome = try await save(author: author, job: job) { save in
                try save.updateRows(entity, predicate: filter, assignments: frozen, after: last, limit: size)
            }
            total.add(outcome.value.0)
            after = outcome.value.1
            more = outcome.value.2
            progress?(total)
        }
        return total
    }

    /// The positions and converted values of an update's `set`.
    package static func assignments(_ values: [String: Value], in entity: EntitySchema) throws -> [(Int, Value)] {
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

    /// Finds the records that share the values of `fields` and deletes all
    /// but one of each group: the first stored (`keep: .first`) or the last.
    ///
    /// Records with null in any of `fields` are never duplicates. The deletes
    /// are logged like any other.
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field.
    @discardableResult
    public func resolveDuplicates(
        entity name: String, by fields: [String], keep: DuplicateResolution,
        where predicate: String? = nil, arguments: [String: Value] = [:],
        author: String, job: String? = nil, batchSize: Int? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let entity = try schema.entity(name)
        let groups = try DuplicateQuery(
            entity: entity, schema: schema, by: fields, predicate: predicate, arguments: arguments)
        return try await deleteLoop(
            entity, select: groups.redundantRowids(keep: keep), author: author, job: job,
            batchSize: batchSize, progress: progress)
    }

    private func deleteLoop(
        _ entity: EntitySchema, select: SQLFragment, author: String, job: String?,
        batchSize: Int?, progress: (@Sendable (WriteCounts) -> Void)?
    ) async throws -> WriteCounts {
        let size = batchSize ?? configuration.saveEvery
        var total = WriteCounts()
        while true {
            try Task.checkCancellation()
            let outcome = try await save(author: author, job: job) { save in
                try save.deleteRows(entity, select: select, limit: size)
            }
            // Cascades and nullified references count too: the counters
            // agree with the history (DESIGN §3).
            total.add(outcome.value.counts)
            progress?(total)
            if outcome.value.rows < size { return total }
        }
    }
}

/// Which record of a duplicate group stays.
public enum DuplicateResolution: String, Sendable, Hashable, Codable {
    /// The record stored first.
    case keepFirst = "keep-first"
    /// The record stored last.
    case keepLast = "keep-last"
}
