import GRDB
import GRDBSQLite

/// The SQL of duplicate detection and resolution.
package struct DuplicateQuery: Sendable {
    package let entity: EntitySchema
    package let fields: [Field]
    package let filter: SQLFragment
    /// The fields as a group compares them, in the dialect (a JSON value by its text).
    package let groups: [String]

    package init(
        entity: EntitySchema, schema: StoreSchema, by names: [String], predicate: String?,
        arguments: [String: Value], dialect: any SQLDialect = .sqlite
    ) throws {
        guard !names.isEmpty else {
            throw DepotError(.invalidArgument, "duplicates are found by at least one field")
        }
        self.entity = entity
        self.fields = try names.map { try entity.field(named: $0) }
        self.groups = fields.map { dialect.comparable(SQL.quote($0.name), $0) }
        let compiled = try PredicateCompiler.compile(
            predicate, entity: entity, schema: schema, arguments: arguments,
            dialect: dialect)
        let notNull = fields.map { "\(SQL.quote($0.name)) IS NOT NULL" }.joined(separator: " AND ")
        self.filter = SQLFragment(sql: "(\(notNull) AND \(compiled.sql))", arguments: compiled.arguments)
    }
}
