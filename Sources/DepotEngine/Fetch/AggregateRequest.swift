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
    public init(entity: String, field: String? = nil, functions: [AggregateFunction]? = nil,
                groupBy: [String] = [], where predicate: String? = nil, arguments: [String: Value] = [:]) {
        self.entity = entity
        self.field = field
        self.functions = functions ?? (field == nil ? [.count] : [])
        self.groupBy = groupBy
        self.predicate = predicate
        self.arguments = arguments
    }
}

extension StoreReader {
    /// Computes count, sum, avg, min and max of a field in SQLite, per group.
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field, `sum`/`avg`
    ///   of a field that is not a number, or a bad predicate.
    public func aggregate(_ request: AggregateRequest) async throws -> AggregateResult {
        let entity = try entity(request.entity)
        // A field or a key path with one value per record (DESIGN §12).
        let target = try request.field.map { try PredicateCompiler.expression($0, entity: entity, schema: schema) }
        let field = target?.field
        var functions = request.functions
        if functions.isEmpty {
            functions = field.map { $0.type.isNumeric ? [.count, .sum, .avg, .min, .max] : [.count, .min, .max] }
                ?? [.count]
        }
        var selects: [String] = []
        var resultTypes: [FieldType?] = []
        for function in functions {
            guard let field else {
                guard function == .count else {
                    throw DepotError(.invalidArgument, "\(function.rawValue) needs a field")
                }
                selects.append("count(*)")
                resultTypes.append(.int)
                continue
            }
            let column = target!.sql
            switch function {
            case .count:
                selects.append("count(\(column))")
                resultTypes.append(.int)
            case .sum, .avg:
                guard field.type.isNumeric else {
                    throw DepotError(.typeMismatch, "\(function.rawValue) needs a numeric field, but "
                        + "\(JSONText.quoted(field.name)) is \(field.type.rawValue)")
                }
                selects.append("\(function.rawValue)(\(column))")
                resultTypes.append(function == .avg ? .double : field.type)
            case .min, .max:
                selects.append("\(function.rawValue)(\(column))")
                resultTypes.append(field.type)
            }
        }
        let groups = try request.groupBy.map { try PredicateCompiler.expression($0, entity: entity, schema: schema) }
        let groupFields = groups.map(\.field)
        let filter = try PredicateCompiler.compile(request.predicate, entity: entity, schema: schema, arguments: request.arguments)
        let groupColumns = groups.map(\.sql)
        var sql = "SELECT " + (groupColumns + selects).joined(separator: ", ")
            + " FROM \(entity.table) WHERE \(filter.sql)"
        if !groupColumns.isEmpty {
            sql += " GROUP BY " + groupColumns.joined(separator: ", ")
                + " ORDER BY " + groupColumns.joined(separator: ", ")
        }
        let finalSQL = sql
        let finalFunctions = functions
        let types = resultTypes
        return try await read { db in
            let preparedStatement = try db.makeStatement(sql: finalSQL)
            defer { withExtendedLifetime(preparedStatement) {} }
            let statement = preparedStatement.sqliteStatement
            for (i, v) in filter.arguments.enumerated() { SQL.bind(v, to: statement, at: Int32(i + 1)) }
            defer { sqlite3_reset(statement) }
            var rows: [AggregateResult.Row] = []
            while try SQL.step(statement, db) {
                let groups = groupFields.indices.map { SQL.column(statement, Int32($0), as: groupFields[$0].type) }
                let values = types.indices.map { i -> Value in
                    let column = Int32(groupFields.count + i)
                    return types[i].map { SQL.column(statement, column, as: $0) } ?? SQL.column(statement, column)
                }
                rows.append(.init(groups: groups, values: values))
            }
            return AggregateResult(groupBy: request.groupBy, functions: finalFunctions, rows: rows)
        }
    }
}
