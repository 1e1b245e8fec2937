/// What the SQL of one backend writes its own way (after sql-kit's
/// `SQLDialect`): placeholders, truth values, the null-safe inequality,
/// text order, and the few functions the predicate compiler, the fetch
/// query and the aggregate plans need. Those are written once against this
/// protocol; SQLite's dialect is ``SQLiteDialect``, PostgreSQL's lives in
/// DepotPostgres (DESIGN §15).
///
/// Every expression a dialect writes must give the result SQLite gives:
/// text compares and sorts by its bytes, nulls sort first, a sum of no
/// values is 0, an average is a double.
package protocol SQLDialect: Sendable {
    /// The placeholder of the `n`th bound value, from 1 (`?`, `$n`).
    func placeholder(_ n: Int) -> String
    /// The literals of true and false.
    var trueLiteral: String { get }
    var falseLiteral: String { get }
    /// Null-safe `!=`: true when exactly one side is null.
    var isDistinctFrom: String { get }
    /// What follows a text value so that it compares by its bytes (`""`
    /// where that is the default).
    var byteCollation: String { get }
    /// `column` holding `field`'s values as a value to compare (a JSON
    /// value compares as its text).
    func comparable(_ column: String, _ field: Field) -> String
    /// Whether the text `needle` (SQL) occurs in `column`.
    func contains(_ column: String, _ needle: String) -> String
    /// The last `count` characters of `column`.
    func suffix(_ column: String, count: Int) -> String
    /// An NSPredicate `LIKE` pattern as this dialect matches it: the
    /// operator and the pattern to bind.
    ///
    /// - Throws: ``DepotError/Code/invalidPredicate`` for a pattern the
    ///   database cannot match (at `position`).
    func like(_ pattern: String, at position: Int) throws -> (operator: String, pattern: String)
    /// `column` in the values of `list`, a bound JSON array of `field`'s
    /// values (of their folded texts when `folded`).
    func inJSONArray(_ column: String, _ list: String, _ field: Field, folded: Bool) -> String
    /// A key path's `@sum`, `@avg`, `@min` or `@max` (`op`) of `value`,
    /// `field`'s values: a sum of none is 0, an average a double.
    func keyPathAggregate(_ op: String, _ value: String, _ field: Field) -> String
    /// The terms that end every fetch's `ORDER BY`, so that records equal
    /// in its keys come in one order every time.
    func tieBreak(_ entity: EntitySchema) -> [String]

    // The aggregate plans (`AggregatePlan`).

    /// A column of an aggregate's result as read back (`sql` as it is, or
    /// PostgreSQL's as text).
    func resultColumn(_ sql: String) -> String
    /// `function` (`sum` or `avg`) of `value`, averaged in doubles.
    func sumOrAverage(_ function: String, _ value: String) -> String
    /// The number `sql` as a double.
    func real(_ sql: String) -> String
    /// `a op b` (`+`, `-`, `*`, `%`) of two integers, or `-a` when `a` is
    /// nil; out of the 64-bit range it gives a value that is not an
    /// integer (SQLite's double), never an error.
    func integerArithmetic(_ a: String?, _ op: String, _ b: String) -> String
    /// The absolute value of the integer `sql`, out of range as above.
    func integerAbs(_ sql: String) -> String
    /// The square root of the number `sql` as a double, null when it is
    /// negative. `sql` appears once in it: its placeholders are bound in
    /// order (SQLite's `?`), and nested roots would double it each time.
    func squareRoot(_ sql: String) -> String
    /// The text `sql` with its letters a to z in upper (or lower) case.
    func asciiCase(_ sql: String, upper: Bool) -> String
    /// `function` (`min` or `max`) of `value`, `field`'s values.
    func extreme(_ function: String, _ value: String, _ field: Field) -> String
    /// A group's key, `sql` of `field`, compared by bytes.
    func groupKey(_ sql: String, _ field: Field) -> String
    /// `key` in `ORDER BY`, nulls first.
    func nullsFirst(_ key: String) -> String

    // The system tables (``SQLStatement``).

    /// A bound timestamp (`sql`, canonical UTC text) as it compares with a
    /// column of timestamps: SQLite keeps them as that text, PostgreSQL as
    /// `timestamptz`.
    func timestamp(_ sql: String) -> String
    /// The last id the serial `id` column of the table named by the text
    /// literal `table` gave, 0 when none (a table that never held a row).
    func lastSerial(_ table: String) -> String
    /// The seconds from the timestamp in the text column `column` to now, as a double.
    func secondsSince(_ column: String) -> String
    /// A bound value (`sql`) as `depot_meta` keeps it: SQLite's column
    /// takes any type, PostgreSQL's text.
    func metaValue(_ sql: String) -> String
    /// What a row of `depot_changes` counts for in a prune's step:
    /// PostgreSQL logs a run of new records as one row of `span` records.
    var changeWeight: String { get }
    /// How many changes a row of `depot_changes` (alias `c`) holds, null
    /// for one: SQLite logs each change in a row of its own.
    var changeSpan: String { get }
    /// Whether a row of `depot_changes` (alias `c`) holding a run of
    /// changes names the identifier bound at `sql`; nil where no row holds
    /// a run (SQLite).
    func runNames(_ sql: String) -> String?
    /// What stands for no limit before an `OFFSET`.
    var unlimited: String { get }
    /// A bound text (`sql`) written to a column of bytes as its UTF-8
    /// (SQLite's `BLOB`, PostgreSQL's `bytea`): a job's checkpoint.
    func bytes(_ sql: String) -> String
    /// A column of bytes (`column`) read back as the UTF-8 text they hold.
    func text(ofBytes column: String) -> String

    // A record's own columns (the record primitives written once,
    // `Write/WriteContext+Records.swift`).

    /// `column`, a stored field's, in a select list, read back as the
    /// field's value by ``Value/stored(as:)``.
    func selectField(_ column: String, _ field: Field) -> String
    /// A bound value (`sql`) written to a column of `field`.
    func bindField(_ sql: String, _ field: Field) -> String
    /// The columns that name a stored record of `entity` in a save
    /// (``WriteContext/RecordKey``): SQLite's rowid, PostgreSQL's identifier.
    func recordKey(_ entity: EntitySchema) -> RecordKeyColumns
    /// A column's SQL type for values of `type`.
    func columnType(_ type: FieldType) -> String
    /// A query of the names of the columns of table `name` (the entity's
    /// name), `placed` as statements name it: one row each.
    func columnNames(name: String, placed: String) -> String
    /// Whether dropping a column takes no time (PostgreSQL marks it
    /// dropped; SQLite rewrites the table).
    var dropsColumnsCheaply: Bool { get }
}

/// The columns that name a stored record (``SQLDialect/recordKey(_:)``).
package struct RecordKeyColumns: Sendable {
    /// Their select list, in order.
    package var select: [String]
    /// Their names, as a match `name = value` writes them.
    package var match: [String]
    /// `ORDER BY` them.
    package var order: String

    package init(select: [String], match: [String], order: String) {
        self.select = select
        self.match = match
        self.order = order
    }
}

extension SQLDialect {
    /// `column` compared by bytes when `field` holds text.
    package func ordered(_ column: String, _ field: Field) -> String {
        field.type.isTextual && !byteCollation.isEmpty ? "(\(column)\(byteCollation))" : column
    }

    /// ``byteCollation`` after a value of `field` when it holds text.
    package func byteCollation(of field: Field) -> String { field.type.isTextual ? byteCollation : "" }
}

/// SQLite's SQL, the default of every compiler.
package struct SQLiteDialect: SQLDialect {
    package init() {}

    /// SQLite's limit on the length of a LIKE or GLOB pattern, in bytes.
    static let maxPattern = 50_000

    package func placeholder(_ n: Int) -> String { "?" }
    package func columnType(_ type: FieldType) -> String { type.sqlType }
    package var dropsColumnsCheaply: Bool { false }
    package func columnNames(name: String, placed: String) -> String {
        "SELECT name FROM pragma_table_info('\(name.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''"))')"
    }
    package var trueLiteral: String { "1" }
    package var falseLiteral: String { "0" }
    package var isDistinctFrom: String { "IS NOT" }
    package var byteCollation: String { "" }
    package func comparable(_ column: String, _ field: Field) -> String { column }
    package func contains(_ column: String, _ needle: String) -> String { "(instr(\(column), \(needle)) > 0)" }
    package func suffix(_ column: String, count: Int) -> String { "substr(\(column), -\(count))" }

    package func like(_ pattern: String, at position: Int) throws -> (operator: String, pattern: String) {
        let glob = Self.glob(fromLike: pattern)
        guard glob.utf8.count <= Self.maxPattern else {
            throw DepotError(
                .invalidPredicate,
                "the LIKE pattern is longer than \(Self.maxPattern) bytes, "
                    + "more than SQLite matches; use CONTAINS, BEGINSWITH or ENDSWITH", position: position)
        }
        return ("GLOB", glob)
    }

    package func inJSONArray(_ column: String, _ list: String, _ field: Field, folded: Bool) -> String {
        "(\(column) IN (SELECT value FROM json_each(\(list))))"
    }

    package func keyPathAggregate(_ op: String, _ value: String, _ field: Field) -> String {
        switch op {
        case "sum": field.type == .double ? "total(\(value))" : "coalesce(sum(\(value)), 0)"
        default: "\(op)(\(value))"
        }
    }

    package func tieBreak(_ entity: EntitySchema) -> [String] { ["rowid"] }
    package func resultColumn(_ sql: String) -> String { sql }
    package func sumOrAverage(_ function: String, _ value: String) -> String { "\(function)(\(value))" }
    package func real(_ sql: String) -> String { "CAST(\(sql) AS REAL)" }
    // SQLite's own arithmetic turns an overflowing integer into a double.
    package func integerArithmetic(_ a: String?, _ op: String, _ b: String) -> String {
        a.map { "(\($0) \(op) \(b))" } ?? "(\(op)\(b))"
    }
    // abs() of the smallest integer is an error in SQLite; its negation is a double.
    package func integerAbs(_ sql: String) -> String { "abs(-(\(sql)))" }
    // SQLite's sqrt() is null for a negative number.
    package func squareRoot(_ sql: String) -> String { "sqrt(CAST(\(sql) AS REAL))" }
    // SQLite's upper() and lower() change ASCII letters only.
    package func asciiCase(_ sql: String, upper: Bool) -> String { "\(upper ? "upper" : "lower")(\(sql))" }
    package func extreme(_ function: String, _ value: String, _ field: Field) -> String { "\(function)(\(value))" }
    package func groupKey(_ sql: String, _ field: Field) -> String { sql }
    package func nullsFirst(_ key: String) -> String { key }
    package func timestamp(_ sql: String) -> String { sql }
    package func lastSerial(_ table: String) -> String {
        "coalesce((SELECT seq FROM sqlite_sequence WHERE name = \(table)), 0)"
    }
    package func secondsSince(_ column: String) -> String { "((julianday('now') - julianday(\(column))) * 86400.0)" }
    package func metaValue(_ sql: String) -> String { sql }
    package var changeWeight: String { "1" }
    package var changeSpan: String { "NULL" }
    package func runNames(_ sql: String) -> String? { nil }
    package var unlimited: String { "-1" }
    package func bytes(_ sql: String) -> String { "CAST(\(sql) AS BLOB)" }
    package func text(ofBytes column: String) -> String { "CAST(\(column) AS TEXT)" }
    package func selectField(_ column: String, _ field: Field) -> String { column }
    package func bindField(_ sql: String, _ field: Field) -> String { sql }
    package func recordKey(_ entity: EntitySchema) -> RecordKeyColumns {
        RecordKeyColumns(select: ["rowid"], match: ["rowid"], order: "rowid")
    }

    /// An NSPredicate LIKE pattern (`*` any run, `?` one character, `\*` and
    /// `\?` literal) as a GLOB pattern, where `[` starts a character class.
    static func glob(fromLike pattern: String) -> String {
        var out = ""
        var escaped = false
        for ch in pattern {
            if escaped {
                switch ch {
                case "*": out += "[*]"
                case "?": out += "[?]"
                case "[": out += "[[]"
                default: out.append(ch)
                }
                escaped = false
                continue
            }
            switch ch {
            case "\\": escaped = true
            case "[": out += "[[]"
            default: out.append(ch)
            }
        }
        if escaped { out += "\\" }
        return out
    }
}

extension SQLDialect where Self == SQLiteDialect {
    /// SQLite's SQL.
    package static var sqlite: SQLiteDialect { SQLiteDialect() }
}
