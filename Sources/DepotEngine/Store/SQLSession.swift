import Foundation

/// A connection of one backend in one transaction, as the parts of the
/// engine written once use it: a statement in, rows of values out (GRDB's
/// `Database.execute` and `Row.fetchAll`, sql-kit's `SQLDatabase.execute`).
/// Processors, idempotency keys, consumers and pruning are written once
/// over it (`Write/WriteContext+Processors.swift`,
/// `History/HistoryContext.swift`); a backend gives only this and its
/// ``SQLDialect``.
package protocol SQLSession: AnyObject, Sendable {
    /// The rows `statement` gives, each its columns' values: integers,
    /// doubles, text and null, whatever the backend's column types (a
    /// boolean column comes as SQLite gives it, 0 or 1).
    func rows(_ statement: SQLStatement) async throws -> [[Value]]
}

extension SQLSession {
    /// Runs `statement`, whose rows do not matter.
    package func execute(_ statement: SQLStatement) async throws { _ = try await rows(statement) }

    /// The first column of the first row, nil when there is none or it is null.
    package func scalar(_ statement: SQLStatement) async throws -> Value? {
        guard let value = try await rows(statement).first?.first, value != .null else { return nil }
        return value
    }
}

/// One statement of SQL written once for every backend: its text, the
/// values it binds where the text names them, and the store's tables by
/// name, which each backend places (a PostgreSQL store's schema).
///
/// ```swift
/// let kept: SQLStatement =
///     "SELECT digest FROM \(table: "depot_idempotency") WHERE key = \(bind: key)"
/// ```
package struct SQLStatement: Sendable, ExpressibleByStringInterpolation {
    package enum Part: Sendable, Hashable {
        case text(String)
        case bind(Value)
        /// A bound timestamp (canonical UTC text), as the dialect compares
        /// it with a column of timestamps (``SQLDialect/timestamp(_:)``).
        case timestamp(String)
        /// A system table of the store, by its name.
        case table(String)
        /// What makes the text before it compare by its bytes (``SQLDialect/byteCollation``).
        case byteCollation
        /// The last id a system table's serial column gave (``SQLDialect/lastSerial(_:)``).
        case lastSerial(table: String)
        /// Seconds from a timestamp column's text to now (``SQLDialect/secondsSince(_:)``).
        case secondsSince(String)
        /// A bound value of `depot_meta` (``SQLDialect/metaValue(_:)``).
        case meta(Value)
        /// What a row of `depot_changes` counts for (``SQLDialect/changeWeight``).
        case changeWeight
        /// A bound text written to a column of bytes (``SQLDialect/bytes(_:)``).
        case bytes(String)
        /// A column of bytes read as text (``SQLDialect/text(ofBytes:)``).
        case textOfBytes(String)
        /// SQL the engine wrote itself (quoted names, the dialect's words), as it is.
        case sql(String)
        /// An entity's table, by the entity's name.
        case entityTable(String)
        /// Fields of an entity in a select list (``SQLDialect/selectField(_:_:)``).
        case fields([Field])
        /// A bound value written to a field's column (``SQLDialect/bindField(_:_:)``).
        case fieldValue(Field, Value)
        /// The columns naming a stored record of an entity, selected (``SQLDialect/recordKey(_:)``).
        case recordKey(EntitySchema)
        /// `ORDER BY` the columns naming a stored record.
        case recordKeyOrder(EntitySchema)
        /// The columns naming a stored record, as they are (``RecordKeyColumns/match``).
        case recordKeyColumns(EntitySchema)
        /// The stored record of an entity with this key: `column = value AND …`.
        case recordKeyMatch(EntitySchema, [Value])
        /// Values bound by placeholders the text before holds already (a
        /// compiled fragment's): numbered ones (`$n`) count from the
        /// statement's first value, so such a fragment binds first.
        case arguments([Value])
        /// How many changes a row of `depot_changes` (alias `c`) holds, null
        /// for one (``SQLDialect/changeSpan``).
        case changeSpan
        /// Whether a row of `depot_changes` (alias `c`) holding a run of
        /// changes names this identifier (``SQLDialect/runNames(_:)``).
        case runNames(String)
        /// The statement listing the columns of an entity's table (by its name).
        case columnNames(String)
        /// A column's type for values of a field type.
        case columnType(FieldType)
    }

    package private(set) var parts: [Part]
    /// Whether its text recurs, so that a backend keeps it prepared (a
    /// system table's statement); false for a user's predicate's, whose
    /// every text would stay in the cache.
    package private(set) var recurs = true

    /// The statement, marked as written for one request (not kept prepared).
    package var once: SQLStatement {
        var out = self
        out.recurs = false
        return out
    }

    package init(stringLiteral value: String) { parts = [.text(value)] }

    package init(stringInterpolation: Interpolation) { parts = stringInterpolation.parts }

    package struct Interpolation: StringInterpolationProtocol {
        var parts: [Part] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            parts.reserveCapacity(2 * interpolationCount + 1)
        }

        package mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { parts.append(.text(literal)) }
        }

        package mutating func appendInterpolation(bind value: Value) { parts.append(.bind(value)) }
        package mutating func appendInterpolation(bind value: String) { parts.append(.bind(.string(value))) }
        package mutating func appendInterpolation(bind value: String?) {
            parts.append(.bind(value.map(Value.string) ?? .null))
        }
        package mutating func appendInterpolation(bind value: Int) { parts.append(.bind(.int(Int64(value)))) }
        package mutating func appendInterpolation(bind value: Int64) { parts.append(.bind(.int(value))) }
        package mutating func appendInterpolation(bind value: Double) { parts.append(.bind(.double(value))) }
        package mutating func appendInterpolation(timestamp value: String) { parts.append(.timestamp(value)) }
        package mutating func appendInterpolation(table name: String) { parts.append(.table(name)) }
        package mutating func appendInterpolation(lastTransactionID table: String) {
            parts.append(.lastSerial(table: table))
        }
        package mutating func appendInterpolation(secondsSince column: String) { parts.append(.secondsSince(column)) }
        package mutating func appendInterpolation(meta value: Value) { parts.append(.meta(value)) }
        package mutating func appendInterpolation(changeWeight: Void) { parts.append(.changeWeight) }
        package mutating func appendInterpolation(bytes text: String) { parts.append(.bytes(text)) }
        package mutating func appendInterpolation(textOfBytes column: String) { parts.append(.textOfBytes(column)) }
        /// Another statement, in place.
        package mutating func appendInterpolation(_ statement: SQLStatement) { parts += statement.parts }
        /// SQL the engine wrote itself: never a value a user sent.
        package mutating func appendInterpolation(sql: String) { parts.append(.sql(sql)) }
        package mutating func appendInterpolation(table entity: EntitySchema) {
            parts.append(.entityTable(entity.name))
        }
        package mutating func appendInterpolation(fields: [Field]) { parts.append(.fields(fields)) }
        package mutating func appendInterpolation(field: Field, bind value: Value) {
            parts.append(.fieldValue(field, value))
        }
        package mutating func appendInterpolation(recordKey entity: EntitySchema) { parts.append(.recordKey(entity)) }
        package mutating func appendInterpolation(recordKeyOrder entity: EntitySchema) {
            parts.append(.recordKeyOrder(entity))
        }
        package mutating func appendInterpolation(recordKeyColumns entity: EntitySchema) {
            parts.append(.recordKeyColumns(entity))
        }
        package mutating func appendInterpolation(recordOf entity: EntitySchema, key: [Value]) {
            parts.append(.recordKeyMatch(entity, key))
        }
        /// A compiled fragment (a predicate), its values bound where its text
        /// names them; one with numbered placeholders comes before any
        /// other bound value.
        package mutating func appendInterpolation(fragment: SQLFragment) {
            parts.append(.sql(fragment.sql))
            parts.append(.arguments(fragment.arguments))
        }
        /// Values bound by the placeholders of the text before (see ``Part/arguments(_:)``).
        package mutating func appendInterpolation(arguments: [Value]) { parts.append(.arguments(arguments)) }
        package mutating func appendInterpolation(changeSpan: Void) { parts.append(.changeSpan) }
        package mutating func appendInterpolation(runNames identifier: String) { parts.append(.runNames(identifier)) }
        package mutating func appendInterpolation(columnNamesOf entity: EntitySchema) {
            parts.append(.columnNames(entity.name))
        }
        package mutating func appendInterpolation(columnType type: FieldType) { parts.append(.columnType(type)) }
        /// A text column ordered by its bytes, as SQLite orders text.
        package mutating func appendInterpolation(byteOrder column: String) {
            parts.append(.text(column))
            parts.append(.byteCollation)
        }
    }

    /// The statement's text in `dialect`, with `table` placing each system
    /// table and `entityTable` each entity's table (by the entity's name),
    /// and the values it binds in order.
    package func render(
        _ dialect: any SQLDialect, table: (String) -> String, entityTable: (String) -> String = SQL.quote
    ) -> (sql: String, arguments: [Value]) {
        var sql = ""
        var arguments: [Value] = []
        for part in parts {
            switch part {
            case .text(let text): sql += text
            case .bind(let value):
                arguments.append(value)
                sql += dialect.placeholder(arguments.count)
            case .timestamp(let text):
                arguments.append(.string(text))
                sql += dialect.timestamp(dialect.placeholder(arguments.count))
            case .table(let name): sql += table(name)
            case .byteCollation: sql += dialect.byteCollation
            case .lastSerial(let name):
                let placed = table(name)
                sql += dialect.lastSerial("'" + placed.replacingOccurrences(of: "'", with: "''") + "'")
            case .secondsSince(let column): sql += dialect.secondsSince(column)
            case .meta(let value):
                arguments.append(value)
                sql += dialect.metaValue(dialect.placeholder(arguments.count))
            case .changeWeight: sql += dialect.changeWeight
            case .bytes(let text):
                arguments.append(.string(text))
                sql += dialect.bytes(dialect.placeholder(arguments.count))
            case .textOfBytes(let column): sql += dialect.text(ofBytes: column)
            case .sql(let text): sql += text
            case .entityTable(let name): sql += entityTable(name)
            case .fields(let fields):
                sql += fields.map { dialect.selectField(SQL.quote($0.name), $0) }.joined(separator: ", ")
            case .fieldValue(let field, let value):
                arguments.append(value)
                sql += dialect.bindField(dialect.placeholder(arguments.count), field)
            case .recordKey(let entity): sql += dialect.recordKey(entity).select.joined(separator: ", ")
            case .recordKeyOrder(let entity): sql += dialect.recordKey(entity).order
            case .recordKeyColumns(let entity): sql += dialect.recordKey(entity).match.joined(separator: ", ")
            case .recordKeyMatch(let entity, let key):
                for (k, column) in dialect.recordKey(entity).match.enumerated() {
                    arguments.append(k < key.count ? key[k] : .null)
                    sql += (k > 0 ? " AND " : "") + column + " = " + dialect.placeholder(arguments.count)
                }
            case .arguments(let values):
                precondition(
                    arguments.isEmpty || dialect.placeholder(1) == dialect.placeholder(2),
                    "a fragment with numbered placeholders binds first")
                arguments += values
            case .changeSpan: sql += dialect.changeSpan
            case .runNames(let identifier):
                if let test = dialect.runNames(dialect.placeholder(arguments.count + 1)) {
                    arguments.append(.string(identifier))
                    sql += test
                } else {
                    sql += dialect.falseLiteral
                }
            case .columnNames(let name): sql += dialect.columnNames(name: name, placed: entityTable(name))
            case .columnType(let type): sql += dialect.columnType(type)
            }
        }
        return (sql, arguments)
    }

    /// `"a" = ? AND "b" = ?`: the columns named each equal to its value, bound.
    package static func matching(_ columns: [String], _ values: [Value]) -> SQLStatement {
        var out = SQLStatement(parts: [])
        for (k, (column, value)) in zip(columns, values).enumerated() {
            if k > 0 { out.parts.append(.text(" AND ")) }
            out.parts += [.sql(SQL.quote(column)), .text(" = "), .bind(value)]
        }
        return out
    }

    private init(parts: [Part]) { self.parts = parts }

    /// `self` followed by `other`.
    package static func + (lhs: SQLStatement, rhs: SQLStatement) -> SQLStatement {
        var out = lhs
        out.parts += rhs.parts
        out.recurs = lhs.recurs && rhs.recurs
        return out
    }
}

extension Value {
    /// A stored field's value read back (``SQLDialect/selectField(_:_:)``)
    /// as the field's: SQLite gives a boolean as 0 or 1 and a whole
    /// double as an integer, PostgreSQL every column as text.
    package func stored(as type: FieldType) -> Value {
        switch (self, type) {
        case (.int(let i), .bool): .bool(i != 0)
        case (.int(let i), .double): .double(Double(i))
        case (.string(let s), .bool): .bool(s == "true" || s == "t")
        // A computed integer out of the 64-bit range (numeric) comes as a double, as SQLite gives it.
        case (.string(let s), .int): Int64(s).map(Value.int) ?? Double(s).map(Value.double) ?? self
        case (.string(let s), .double): Double(s).map(Value.double) ?? self
        default: self
        }
    }

    /// An integer column's value (a count, an id); nil for null or another type.
    package var integer: Int64? {
        switch self {
        case .int(let i): i
        case .bool(let b): b ? 1 : 0
        case .double(let d): Int64(exactly: d)
        case .string(let s): Int64(s)
        case .null: nil
        }
    }

    /// A text column's value; nil for null.
    package var text: String? {
        switch self {
        case .string(let s): s
        case .null: nil
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "1" : "0"
        }
    }

    /// A real column's value; nil for null or text that is not a number.
    package var real: Double? {
        switch self {
        case .double(let d): d
        case .int(let i): Double(i)
        case .string(let s): Double(s)
        case .bool, .null: nil
        }
    }
}
