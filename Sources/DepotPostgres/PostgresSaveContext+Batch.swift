public import DepotEngine
import NIOCore
import PostgresNIO

/// Batch deletes and updates in a save of a PostgreSQL store, with the
/// delete rules of DESIGN §12, as an SQLite store's save does them: record
/// by record, each logged as it goes (a tombstone, and every old value
/// where the entity keeps values), a deleted record's cascades, nullified
/// references and denials right after it, so that the history reads change
/// for change as an SQLite store's. Records are taken in identifier order
/// (an SQLite store takes them in storage order).
extension PostgresSaveContext {
    /// `"a" COLLATE "C" = $1 AND …`: the record of `entity` whose identifier
    /// is bound from `$first` on.
    static func identifierMatch(_ entity: EntitySchema, columns: [String]? = nil, first: Int = 1) -> String {
        (columns ?? entity.identifier).enumerated().map { k, name in "\(PostgresSQL.quote(name)) = $\(first + k)" }
            .joined(separator: " AND ")
    }

    /// `ORDER BY` the identifier, text by its bytes.
    static func identifierOrder(_ entity: EntitySchema) -> String {
        entity.identifier.map { PostgresSQL.quote($0) + PostgresSQL.byteOrder(entity, $0) }.joined(separator: ", ")
    }

    /// The identifiers of `entity` that `sql` (selecting the identifier's
    /// columns as text) returns.
    func identifiers(_ entity: EntitySchema, _ sql: String, _ binds: PostgresBindings) async throws -> [[Value]] {
        let fields = entity.identifierIndexes.map { entity.fields[$0] }
        return try await PostgresSQL.textRows(connection, sql, binds, logger: store.logger).map { row in
            zip(fields, row).map { PostgresSQL.value($1, as: $0.type) }
        }
    }

    /// Deletes the records of `entity` whose identifiers `select` gives
    /// (at most `limit`), each with its delete rules.
    ///
    /// - Returns: how many identifiers `select` gave, and what was deleted
    ///   and nullified (cascades included).
    func deleteRecords(_ entity: EntitySchema, select sql: String, binds: PostgresBindings, limit: Int) async throws
        -> (rows: Int, counts: WriteCounts)
    {
        let found = try await identifiers(entity, sql + " LIMIT \(limit)", binds)
        var counts = WriteCounts()
        for identifier in found { try await deleteRecord(entity, identifier: identifier, counts: &counts) }
        try await flushChanges()
        return (found.count, counts)
    }

    /// Deletes one record (nothing when it is already gone, as at the end of
    /// a cycle of cascades), logs it, and applies the delete rules of what
    /// refers to it.
    private func deleteRecord(_ entity: EntitySchema, identifier: [Value], counts: inout WriteCounts) async throws {
        let logger = store.logger
        let tombstoneFields =
            entity.identifierIndexes
            + entity.preserveIndexes.filter { !entity.identifierIndexes.contains($0) }
        let keepsValues = entity.history == .values
        let returning = keepsValues ? Array(entity.fields.indices) : tombstoneFields
        let sql =
            "DELETE FROM \(store.table(entity.name)) WHERE \(Self.identifierMatch(entity)) RETURNING "
            + returning.map { PostgresSQL.selectText(entity.fields[$0]) }.joined(separator: ", ")
        guard
            let row = try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings(identifier), logger: logger)
                .first
        else { return }
        var values: [Int: Value] = [:]
        for (i, f) in returning.enumerated() { values[f] = PostgresSQL.value(row[i], as: entity.fields[f].type) }
        counts.deleted += 1
        var identifierJSON = ""
        Identifier.appendJSON(identifier, to: &identifierJSON)
        try await logChange(
            &pendingChanges, entity: entity.name, identifier: identifierJSON, kind: .delete, fields: nil,
            tombstone: SaveContext.object(entity, tombstoneFields.map { ($0, values[$0]!) }),
            old: keepsValues ? SaveContext.object(entity, returning.map { ($0, values[$0]!) }) : nil,
            new: nil)
        for reference in IncomingReference.all(to: entity, in: store.configuration.entities) {
            let source = reference.source
            let match = Self.identifierMatch(source, columns: reference.columns)
            let binds = PostgresSQL.bindings(identifier)
            switch reference.rule {
            case .deny:
                let count =
                    PostgresSQL.scalar(
                        try await PostgresSQL.textRows(
                            connection,
                            "SELECT count(*)::text FROM "
                                + "\(store.table(source.name)) WHERE \(match)", binds, logger: logger)
                    ).flatMap { Int($0) } ?? 0
                if count > 0 { throw reference.denied(entity, identifierJSON: identifierJSON, count: count) }
            case .cascade:
                let ids = source.identifierIndexes.map { PostgresSQL.selectText(source.fields[$0]) }.joined(
                    separator: ", ")
                for child in try await identifiers(
                    source,
                    "SELECT \(ids) FROM \(store.table(source.name)) WHERE \(match) "
                        + "ORDER BY \(Self.identifierOrder(source))", binds)
                {
                    try await deleteRecord(source, identifier: child, counts: &counts)
                }
            case .nullify:
                counts.updated += try await nullify(reference, match: match, identifier: identifier)
            }
        }
    }

    /// Sets `reference` to null in the records of its source that hold
    /// `identifier`, logging each as an update of its columns.
    private func nullify(_ reference: IncomingReference, match: String, identifier: [Value]) async throws -> Int {
        let source = reference.source
        let ids = source.identifierIndexes.map { PostgresSQL.selectText(source.fields[$0]) }.joined(separator: ", ")
        let found = try await identifiers(
            source,
            "SELECT \(ids) FROM \(store.table(source.name)) WHERE \(match) "
                + "ORDER BY \(Self.identifierOrder(source))", PostgresSQL.bindings(identifier))
        guard !found.isEmpty else { return 0 }
        try await PostgresSQL.execute(
            connection,
            "UPDATE \(store.table(source.name)) SET "
                + reference.columns.map { "\(PostgresSQL.quote($0)) = NULL" }.joined(separator: ", ")
                + " WHERE \(match)",
            PostgresSQL.bindings(identifier), logger: store.logger)
        let positions = reference.columns.compactMap { source.position(of: $0) }
        let fields = JSONText.array(reference.columns)
        let keepsValues = source.history == .values
        for values in found {
            var id = ""
            Identifier.appendJSON(values, to: &id)
            try await logChange(
                &pendingChanges, entity: source.name, identifier: id, kind: .update, fields: fields,
                old: keepsValues ? SaveContext.object(source, Array(zip(positions, identifier))) : nil,
                new: keepsValues ? SaveContext.object(source, positions.map { ($0, Value.null) }) : nil)
        }
        return found.count
    }

    /// Sets `assignments` on the records matching `predicate` whose
    /// identifier follows `after` (in identifier order), at most `limit`.
    ///
    /// - Returns: the counts, the last identifier visited, and whether more may follow.
    func updateRecords(
        _ entity: EntitySchema, predicate: SQLFragment, assignments: [(Int, Value)], after: [Value]?,
        limit: Int
    ) async throws -> (WriteCounts, [Value]?, Bool) {
        let logger = store.logger
        for (r, set) in try SaveContext.assignedReferences(entity, assignments: assignments) {
            let target = try store.entity(r.target)
            let found = try await PostgresSQL.textRows(
                connection,
                "SELECT 1::text FROM \(store.table(target.name)) WHERE "
                    + Self.identifierMatch(target), PostgresSQL.bindings(set), logger: logger)
            if found.isEmpty { throw SaveContext.unstoredReference(r, missing: SaveContext.missing(target.name, set)) }
        }
        let idPositions = entity.identifierIndexes
        let selected = idPositions + assignments.map(\.0)
        // The predicate's values are $1…; the keyset's follow.
        var values = predicate.arguments
        var keyset = ""
        if let after {
            // (a, b) > (x, y), written out so that text compares by its bytes, as the order does.
            var terms: [String] = []
            for k in entity.identifier.indices {
                var parts: [String] = []
                for j in 0..<k {
                    values.append(after[j])
                    parts.append("\(PostgresSQL.quote(entity.identifier[j])) = $\(values.count)")
                }
                values.append(after[k])
                parts.append(
                    "\(PostgresSQL.quote(entity.identifier[k]))\(PostgresSQL.byteOrder(entity, entity.identifier[k])) "
                        + "> $\(values.count)")
                terms.append("(" + parts.joined(separator: " AND ") + ")")
            }
            keyset = " AND (" + terms.joined(separator: " OR ") + ")"
        }
        let sql =
            "SELECT " + selected.map { PostgresSQL.selectText(entity.fields[$0]) }.joined(separator: ", ")
            + " FROM \(store.table(entity.name)) WHERE (\(predicate.sql))\(keyset) ORDER BY \(Self.identifierOrder(entity)) "
            + "LIMIT \(limit)"
        let rows = try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings(values), logger: logger)
        var counts = WriteCounts()
        var last = after
        let keepsValues = entity.history == .values
        let update =
            "UPDATE \(store.table(entity.name)) SET "
            + assignments.enumerated().map { k, a in "\(PostgresSQL.quote(entity.fields[a.0].name)) = $\(k + 1)" }
            .joined(separator: ", ")
            + " WHERE " + Self.identifierMatch(entity, first: assignments.count + 1)
        for row in rows {
            let identifier = idPositions.indices.map {
                PostgresSQL.value(row[$0], as: entity.fields[idPositions[$0]].type)
            }
            last = identifier
            var changed: [Int] = []
            for (k, (field, value)) in assignments.enumerated() {
                let stored = PostgresSQL.value(row[idPositions.count + k], as: entity.fields[field].type)
                if !Self.equal(stored, value) { changed.append(k) }
            }
            if changed.isEmpty {
                counts.unchanged += 1
                continue
            }
            try await PostgresSQL.execute(
                connection, update, PostgresSQL.bindings(assignments.map(\.1) + identifier),
                logger: logger)
            var id = ""
            Identifier.appendJSON(identifier, to: &id)
            let names = changed.map { entity.fields[assignments[$0].0].name }
            try await logChange(
                &pendingChanges, entity: entity.name, identifier: id, kind: .update,
                fields: JSONText.array(names),
                old: keepsValues
                    ? SaveContext.object(
                        entity,
                        changed.map { k in
                            let field = assignments[k].0
                            return (field, PostgresSQL.value(row[idPositions.count + k], as: entity.fields[field].type))
                        }) : nil,
                new: keepsValues ? SaveContext.object(entity, changed.map { assignments[$0] }) : nil)
            counts.updated += 1
        }
        try await flushChanges()
        return (counts, last, rows.count == limit)
    }

    /// Copies the logged changes of batch operations into the history.
    func flushChanges() async throws {
        guard pendingChanges.readableBytes > 0 else { return }
        let changes = pendingChanges
        pendingChanges = ByteBuffer()
        try await copyChanges(changes)
    }
}

extension PostgresStore {
    /// Deletes the records a predicate selects, in saves of at most
    /// `batchSize` records, applying delete rules; as an SQLite store's
    /// ``Store/delete(entity:where:arguments:author:job:batchSize:progress:)``.
    @discardableResult
    public nonisolated func delete(
        entity name: String, where predicate: String?, arguments: [String: Value] = [:],
        author: String, job: String? = nil, batchSize: Int? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let entity = try entity(name)
        let filter = try PredicateCompiler.compile(
            predicate, entity: entity, schema: schema, arguments: arguments,
            dialect: .postgresql)
        let ids = entity.identifierIndexes.map { PostgresSQL.selectText(entity.fields[$0]) }.joined(separator: ", ")
        let sql =
            "SELECT \(ids) FROM \(table(entity.name)) WHERE \(filter.sql) "
            + "ORDER BY \(PostgresSaveContext.identifierOrder(entity))"
        return try await deleteLoop(
            entity, select: sql, arguments: filter.arguments, author: author, job: job,
            batchSize: batchSize, progress: progress)
    }

    /// Deletes all records but one of each group of duplicates: the one
    /// with the smallest identifier (`keepFirst`) or the largest.
    @discardableResult
    public nonisolated func resolveDuplicates(
        entity name: String, by fields: [String], keep: DuplicateResolution,
        where predicate: String? = nil, arguments: [String: Value] = [:],
        author: String, job: String? = nil, batchSize: Int? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let query = try duplicateQuery(entity: name, by: fields, where: predicate, arguments: arguments, limit: nil)
        let entity = query.entity
        let ids = entity.identifier.map(PostgresSQL.quote).joined(separator: ", ")
        let order = PostgresSaveContext.identifierOrder(entity)
        let groups = query.fields.map { f in
            f.type == .json ? "\(PostgresSQL.quote(f.name))::text" : PostgresSQL.quote(f.name)
        }.joined(separator: ", ")
        let textIds = entity.identifierIndexes.map { PostgresSQL.selectText(entity.fields[$0]) }.joined(separator: ", ")
        let sql =
            "SELECT \(textIds) FROM (SELECT \(ids), row_number() OVER (PARTITION BY \(groups) ORDER BY \(order)) AS n, "
            + "count(*) OVER (PARTITION BY \(groups)) AS members FROM \(table(entity.name)) WHERE \(query.filter.sql)) AS g "
            + "WHERE " + (keep == .keepFirst ? "n > 1" : "n < members") + " ORDER BY \(order)"
        return try await deleteLoop(
            entity, select: sql, arguments: query.filter.arguments, author: author, job: job,
            batchSize: batchSize, progress: progress)
    }

    private nonisolated func deleteLoop(
        _ entity: EntitySchema, select: String, arguments: [Value], author: String,
        job: String?, batchSize: Int?,
        progress: (@Sendable (WriteCounts) -> Void)?
    ) async throws -> WriteCounts {
        let size = max(1, batchSize ?? configuration.saveEvery)
        let binds = PostgresSQL.bindings(arguments)
        var total = WriteCounts()
        while true {
            try Task.checkCancellation()
            let outcome = try await save(author: author, job: job) { save in
                try await save.deleteRecords(entity, select: select, binds: binds, limit: size)
            }
            // Cascades and nullified references count too (DESIGN §3).
            total.add(outcome.value.counts)
            progress?(total)
            if outcome.value.rows < size { return total }
        }
    }

    /// Sets fields to values on the records a predicate selects, in saves of
    /// at most `batchSize` records; records that hold the values already are
    /// `unchanged` and not logged.
    @discardableResult
    public nonisolated func update(
        entity name: String, where predicate: String?, arguments: [String: Value] = [:],
        set values: [String: Value], author: String, job: String? = nil, batchSize: Int? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        let entity = try entity(name)
        let filter = try PredicateCompiler.compile(
            predicate, entity: entity, schema: schema, arguments: arguments,
            dialect: .postgresql)
        let assignments = try Store.assignments(values, in: entity)
        let size = max(1, batchSize ?? configuration.saveEvery)
        var total = WriteCounts()
        var after: [Value]?
        var more = true
        while more {
            try Task.checkCancellation()
            let last = after
            let outcome = try await save(author: author, job: job) { save in
                try await save.updateRecords(
                    entity, predicate: filter, assignments: assignments, after: last, limit: size)
            }
            total.add(outcome.value.0)
            after = outcome.value.1
            more = outcome.value.2
            progress?(total)
        }
        return total
    }

    /// Checks a batch update as running it would, without writing.
    nonisolated func checkUpdate(
        entity name: String, where predicate: String?, arguments: [String: Value],
        set values: [String: Value]
    ) throws {
        let entity = try entity(name)
        _ = try PredicateCompiler.compile(
            predicate, entity: entity, schema: schema, arguments: arguments, dialect: .postgresql)
        _ = try Store.assignments(values, in: entity)
    }
}
