import GRDB
import GRDBSQLite

/// An aggregate function computed inside SQLite.
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable, Codable {
    /// The number of records, or of non-null values of the field.
    case count
    /// The sum of a numeric field.
    case sum
    /// The mean of a numeric field.
    case avg
    /// The smallest value.
    case min
    /// The largest value.
    case max
}

/// Statistics of a field, optionally grouped and filtered.
///
/// For example:
///
/// ```swift
/// let request = AggregateRequest(entity: "Trip", field: "budget", groupBy: ["destination"],
///                                where: "isFavorite == true")
/// for row in try await store.reader.aggregate(request).rows {
///     print(row.groups, row.values)
/// }
/// ```
public struct AggregateRequest: Sendable, Hashable {
    /// The entity.
    public var entity: String
    /// The field to aggregate; `nil` counts records.
    public var field: String?
    /// The functions to compute, in the order of each row's values.
    public var functions: [AggregateFunction]
    /// One result row per distinct combination of these fields.
    public var groupBy: [String]
    /// Only records matching this predicate.
    public var predicate: String?
    /// Values for the predicate's placeholders.
    public var arguments: [String: Value]

    /// Creates a request; without `functions`, every function that fits the field.
    public init(
        entity: String, field: String? = nil, functions: [AggregateFunction]? = nil,
        groupBy: [String] = [], where predicate: String? = nil, arguments: [String: Value] = [:]
    ) {
        self.entity = entity
        self.field = field
        self.functions = functions ?? (field == nil ? [.count] : [])
        self.groupBy = groupBy
        self.predicate = predicate
        self.arguments = arguments
    }
}

/// An aggregate request compiled to one statement of an SQL dialect: the
/// same checks, functions and groups on either backend.
package struct AggregatePlan: Sendable {
    /// The statement: the group columns, then one column per function.
    package let sql: String
    /// The values its predicate binds.
    package let arguments: [Value]
    /// The fields of the group columns.
    package let groupFields: [Field]
    /// The type of each function's result.
    package let types: [FieldType]
    /// The functions, as computed (the request's, or every one that fits).
    package let functions: [AggregateFunction]

    /// Compiles `request`. On PostgreSQL every column is read as text:
    /// text sorts and compares by bytes (`COLLATE "C"`) and nulls sort
    /// first, as in SQLite; a boolean's min and max go through 0 and 1.
    package init(_ request: AggregateRequest, schema: StoreSchema, dialect: any SQLDialect = .sqlite) throws {
        let entity = try schema.entity(request.entity)
        // A field or a key path with one value per record (DESIGN §12).
        let target = try request.field.map {
            try PredicateCompiler.expression($0, entity: entity, schema: schema, dialect: dialect)
        }
        let field = target?.field
        var functions = request.functions
        if functions.isEmpty {
            functions =
                field.map { $0.type.isNumeric ? [.count, .sum, .avg, .min, .max] : [.count, .min, .max] }
                ?? [.count]
        }
        func column(_ sql: String) -> String { dialect.resultColumn(sql) }
        var selects: [String] = []
        var resultTypes: [FieldType] = []
        for function in functions {
            guard let field, let target else {
                guard function == .count else {
                    throw DepotError(.invalidArgument, "\(function.rawValue) needs a field")
                }
                selects.append(column("count(*)"))
                resultTypes.append(.int)
                continue
            }
            let value = target.sql
            switch function {
            case .count:
                selects.append(column("count(\(value))"))
                resultTypes.append(.int)
            case .sum, .avg:
                guard field.type.isNumeric else {
                    throw DepotError(
                        .typeMismatch,
                        "\(function.rawValue) needs a numeric field, but "
                            + "\(JSONText.quoted(field.name)) is \(field.type.rawValue)")
                }
                selects.append(column(dialect.sumOrAverage(function.rawValue, value)))
                resultTypes.append(function == .avg ? .double : field.type)
            case .min, .max:
                selects.append(column(dialect.extreme(function.rawValue, value, field)))
                resultTypes.append(field.type)
            }
        }
        let groups = try request.groupBy.map {
            try PredicateCompiler.expression($0, entity: entity, schema: schema, dialect: dialect)
        }
        groupFields = groups.map(\.field)
        let filter = try PredicateCompiler.compile(
            request.predicate, entity: entity, schema: schema,
            arguments: request.arguments, dialect: dialect)
        let groupColumns = groups.map { dialect.groupKey($0.sql, $0.field) }
        var sql =
            "SELECT " + (groupColumns.map(column) + selects).joined(separator: ", ")
            + " FROM \(entity.table) WHERE \(filter.sql)"
        if !groupColumns.isEmpty {
            sql +=
                " GROUP BY " + groupColumns.joined(separator: ", ")
                + " ORDER BY " + groupColumns.map(dialect.nullsFirst).joined(separator: ", ")
        }
        self.sql = sql
        self.arguments = filter.arguments
        self.types = resultTypes
        self.functions = functions
    }
}
