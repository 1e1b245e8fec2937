import GRDB
import GRDBSQLite

extension StoreReader {
    /// The groups of records that share the values of `fields`, found in SQLite.
    ///
    /// Records with null in any of `fields` are never duplicates, as in a SQL
    /// `UNIQUE` constraint. Groups come ordered by their values.
    ///
    /// For example:
    ///
    /// ```swift
    /// let groups = try await store.reader.duplicates(entity: "Trip", by: ["name", "startDate"])
    /// ```
    ///
    /// - Parameter limit: at most this many groups.
    /// - Throws: ``DepotError`` for an unknown entity or field or a bad predicate.
    public func duplicates(
        entity name: String, by fields: [String], where predicate: String? = nil,
        arguments: [String: Value] = [:], limit: Int? = nil
    ) async throws -> [DuplicateGroup] {
        let query = try DuplicateQuery(
            entity: entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments)
        if let limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
        return try await read { db in try query.groups(db, limit: limit) }
    }

    /// Checks a duplicates request without running it, as
    /// ``duplicates(entity:by:where:arguments:limit:)`` would: the entity,
    /// the fields, the predicate and its arguments, the limit.
    public func checkDuplicates(
        entity name: String, by fields: [String], where predicate: String? = nil,
        arguments: [String: Value] = [:], limit: Int? = nil
    ) throws {
        _ = try DuplicateQuery(
            entity: entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments)
        if let limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
    }

    /// The groups of ``duplicates(entity:by:where:arguments:limit:)``, handed
    /// to `body` one at a time as they are found, so that memory holds one
    /// group, not all of them.
    ///
    /// For example, to write them out as they come:
    ///
    /// ```swift
    /// try await store.reader.duplicates(entity: "Trip", by: ["name"]) { group in
    ///     print(group.values, group.identifiers.count)
    /// }
    /// ```
    public func duplicates(
        entity name: String, by fields: [String], where predicate: String? = nil,
        arguments: [String: Value] = [:], limit: Int? = nil,
        _ body: @escaping @Sendable (DuplicateGroup) throws -> Void
    ) async throws {
        let query = try DuplicateQuery(
            entity: entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments)
        if let limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
        try await streamRead { db in try query.groups(db, limit: limit, body) }
    }
}

/// The SQL of duplicate detection and resolution.
package struct DuplicateQuery: Sendable {
    package let entity: EntitySchema
    package let fields: [Field]
    package let filter: SQLFragment

    package init(
        entity: EntitySchema, schema: StoreSchema, by names: [String], predicate: String?,
        arguments: [String: Value], dialect: any SQLDialect = .sqlite
    ) throws {
        guard !names.isEmpty else {
            throw DepotError(.invalidArgument, "duplicates are found by at least one field")
        }
        self.entity = entity
        self.fields = try names.map { try entity.field(named: $0) }
        let compiled = try PredicateCompiler.compile(
            predicate, entity: entity, schema: schema, arguments: arguments,
            dialect: dialect)
        let notNull = fields.map { "\(SQL.quote($0.name)) IS NOT NULL" }.joined(separator: " AND ")
        self.filter = SQLFragment(sql: "(\(notNull) AND \(compiled.sql))", arguments: compiled.arguments)
    }

    private var columns: String { fields.map { SQL.quote($0.name) }.joined(separator: ", ") }

    func groups(_ db: Database, limit: Int?) throws -> [DuplicateGroup] {
        var found: [DuplicateGroup] = []
        try groups(db, limit: limit) { found.append($0) }
        return found
    }

    /// Hands out the groups one at a time, in the order of their values: one
    /// pass over the records sorted by the fields (and storage order within
    /// a group), where a run of two or more is a group. One sort, where
    /// finding the groups' keys first (`GROUP BY … HAVING count(*) > 1`)
    /// and then their members sorted twice (BENCHMARKS.md, "Reads at scale").
    func groups(_ db: Database, limit: Int?, _ body: (DuplicateGroup) throws -> Void) throws {
        if limit == 0 { return }
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        let idColumns = idFields.map { SQL.quote($0.name) }.joined(separator: ", ")
        let sql = "SELECT \(columns), \(idColumns) FROM \(entity.table) WHERE \(filter.sql) ORDER BY \(columns), rowid"
        let preparedStatement = try db.makeStatement(sql: sql)
        defer { withExtendedLifetime(preparedStatement) {} }
        let statement = preparedStatement.sqliteStatement
        for (i, v) in filter.arguments.enumerated() { SQL.bind(v, to: statement, at: Int32(i + 1)) }
        defer { sqlite3_reset(statement) }
        let fields = self.fields
        func identifier() -> Identifier {
            Identifier(idFields.indices.map { SQL.column(statement, Int32(fields.count + $0), as: idFields[$0].type) })
        }
        var current = DuplicateGroup(values: [], identifiers: [])
        var emitted = 0
        while try SQL.step(statement, db) {
            if !current.values.isEmpty,
                fields.indices.allSatisfy({ SQL.columnEquals(statement, Int32($0), current.values[$0]) })
            {
                current.identifiers.append(identifier())
                continue
            }
            if current.identifiers.count > 1 {
                try body(current)
                emitted += 1
                if let limit, emitted == limit { return }
            }
            current.values = fields.indices.map { SQL.column(statement, Int32($0), as: fields[$0].type) }
            current.identifiers.removeAll(keepingCapacity: true)
            current.identifiers.append(identifier())
        }
        if current.identifiers.count > 1 { try body(current) }
    }

    /// The rowids of the records a resolution deletes: every member of a
    /// group but its first (or last) stored.
    func redundantRowids(keep: DuplicateResolution) -> SQLFragment {
        let kept = keep == .keepFirst ? "min(rowid)" : "max(rowid)"
        return SQLFragment(
            sql: "SELECT rowid FROM \(entity.table) WHERE \(filter.sql) AND rowid NOT IN "
                + "(SELECT \(kept) FROM \(entity.table) WHERE \(filter.sql) GROUP BY \(columns)) ORDER BY rowid",
            arguments: filter.arguments + filter.arguments)
    }
}
