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
    public func duplicates(entity name: String, by fields: [String], where predicate: String? = nil,
                           arguments: [String: Value] = [:], limit: Int? = nil) async throws -> [DuplicateGroup] {
        let query = try DuplicateQuery(entity: entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments)
        if let limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
        return try await read { db in try query.groups(db, limit: limit) }
    }
}

/// The SQL of duplicate detection and resolution.
struct DuplicateQuery: Sendable {
    let entity: EntitySchema
    let fields: [Field]
    let filter: SQLFragment

    init(entity: EntitySchema, schema: StoreSchema, by names: [String], predicate: String?,
         arguments: [String: Value]) throws {
        guard !names.isEmpty else {
            throw DepotError(.invalidArgument, "duplicates are found by at least one field")
        }
        self.entity = entity
        self.fields = try names.map { try entity.field(named: $0) }
        let compiled = try PredicateCompiler.compile(predicate, entity: entity, schema: schema, arguments: arguments)
        let notNull = fields.map { "\(SQL.quote($0.name)) IS NOT NULL" }.joined(separator: " AND ")
        self.filter = SQLFragment(sql: "(\(notNull) AND \(compiled.sql))", arguments: compiled.arguments)
    }

    private var columns: String { fields.map { SQL.quote($0.name) }.joined(separator: ", ") }

    func groups(_ db: Database, limit: Int?) throws -> [DuplicateGroup] {
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        let idColumns = idFields.map { SQL.quote($0.name) }.joined(separator: ", ")
        let keys = "SELECT \(columns) FROM \(entity.table) WHERE \(filter.sql) GROUP BY \(columns) "
            + "HAVING count(*) > 1 ORDER BY \(columns)" + (limit.map { " LIMIT \($0)" } ?? "")
        let sql = "SELECT \(columns), \(idColumns) FROM \(entity.table) WHERE \(filter.sql) "
            + "AND (\(columns)) IN (\(keys)) ORDER BY \(columns), rowid"
        let preparedStatement = try db.makeStatement(sql: sql)
        defer { withExtendedLifetime(preparedStatement) {} }
        let statement = preparedStatement.sqliteStatement
        let arguments = filter.arguments + filter.arguments
        for (i, v) in arguments.enumerated() { SQL.bind(v, to: statement, at: Int32(i + 1)) }
        defer { sqlite3_reset(statement) }
        var groups: [DuplicateGroup] = []
        while try SQL.step(statement, db) {
            let values = fields.indices.map { SQL.column(statement, Int32($0), as: fields[$0].type) }
            let id = Identifier(idFields.indices.map {
                SQL.column(statement, Int32(fields.count + $0), as: idFields[$0].type)
            })
            if groups.last?.values != values { groups.append(DuplicateGroup(values: values, identifiers: [])) }
            groups[groups.count - 1].identifiers.append(id)
        }
        return groups
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
