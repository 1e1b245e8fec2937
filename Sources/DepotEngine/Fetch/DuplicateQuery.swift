import GRDB
import GRDBSQLite

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
