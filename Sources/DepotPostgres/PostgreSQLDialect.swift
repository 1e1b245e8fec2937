package import DepotEngine

/// PostgreSQL's SQL for the compilers of the engine (``SQLDialect``),
/// written so that every result is SQLite's: text compares and sorts by its
/// bytes (`COLLATE "C"`), nulls sort first, a sum of bigints stays a bigint,
/// an average is a double, `json` compares as its text.
package struct PostgreSQLDialect: SQLDialect {
    package init() {}

    package func placeholder(_ n: Int) -> String { "$\(n)" }
    /// The type a field's column is stored in (``columnType(_:)``, static,
    /// is the one its values compare in).
    package func columnType(_ type: FieldType) -> String { PostgresSQL.type(type) }
    package var dropsColumnsCheaply: Bool { true }
    package func columnNames(name: String, placed: String) -> String {
        "SELECT attname::text FROM pg_attribute WHERE attrelid = \(PostgresSQL.literal(placed))::regclass "
            + "AND attnum > 0 AND NOT attisdropped"
    }
    package var trueLiteral: String { "TRUE" }
    package var falseLiteral: String { "FALSE" }
    package var isDistinctFrom: String { "IS DISTINCT FROM" }
    package var byteCollation: String { " COLLATE \"C\"" }

    package func comparable(_ column: String, _ field: Field) -> String {
        field.type == .json ? "(\(column))::text" : column
    }

    package func contains(_ column: String, _ needle: String) -> String { "(strpos(\(column), \(needle)) > 0)" }
    package func suffix(_ column: String, count: Int) -> String { "right(\(column), \(count))" }

    package func like(_ pattern: String, at position: Int) throws -> (operator: String, pattern: String) {
        ("LIKE", Self.like(fromLike: pattern))
    }

    package func inJSONArray(_ column: String, _ list: String, _ field: Field, folded: Bool) -> String {
        let type = folded || field.type.isTextual ? "text" : Self.columnType(field.type)
        return
            "(\(column) IN (SELECT value::\(type)\(byteCollation(of: field)) FROM json_array_elements_text(\(list)::json)))"
    }

    package func keyPathAggregate(_ op: String, _ value: String, _ field: Field) -> String {
        switch op {
        // PostgreSQL sums and averages bigints as numeric: back to the field's type.
        case "sum": "coalesce(sum(\(value)), 0)::\(Self.columnType(field.type))"
        case "avg": "avg(\(value))::double precision"
        default: "\(op)(\(value)\(byteCollation(of: field)))"
        }
    }

    /// The identifier, by bytes: a PostgreSQL table has no rowid.
    package func tieBreak(_ entity: EntitySchema) -> [String] {
        entity.identifier.map { name in
            let textual = (try? entity.field(named: name))?.type.isTextual ?? false
            return PostgresSQL.quote(name) + (textual ? byteCollation : "")
        }
    }

    /// Read as text under a name no field has (`ORDER BY "budget"` would
    /// otherwise sort by it, as text).
    package func resultColumn(_ sql: String) -> String { "(\(sql))::text AS \"\u{1}\"" }

    /// SQLite averages in doubles; PostgreSQL would in numeric.
    package func real(_ sql: String) -> String { "(\(sql))::double precision" }

    /// PostgreSQL's bigint arithmetic fails out of range: in numeric it
    /// gives the exact value, which a computed field rejects as SQLite's does.
    package func integerArithmetic(_ a: String?, _ op: String, _ b: String) -> String {
        a.map { "(\($0)::numeric \(op) \(b))" } ?? "(\(op)(\(b))::numeric)"
    }

    package func integerAbs(_ sql: String) -> String { "abs((\(sql))::numeric)" }

    package func squareRoot(_ sql: String) -> String {
        // PostgreSQL's sqrt() fails on a negative number: the value is
        // named once in a subquery and tested there.
        "(SELECT CASE WHEN v < 0 THEN NULL ELSE sqrt(v) END FROM (SELECT (\(sql))::double precision AS v) AS depot_sqrt)"
    }

    package func asciiCase(_ sql: String, upper: Bool) -> String {
        // upper() and lower() follow the database's locale; translate() the same letters as SQLite.
        let lower = "abcdefghijklmnopqrstuvwxyz"
        let (from, to) = upper ? (lower, lower.uppercased()) : (lower.uppercased(), lower)
        return "translate(\(sql), '\(from)', '\(to)')"
    }

    package func sumOrAverage(_ function: String, _ value: String) -> String {
        function == "avg" ? "avg((\(value))::double precision)" : "\(function)(\(value))"
    }

    /// A boolean's least and greatest go through 0 and 1.
    package func extreme(_ function: String, _ value: String, _ field: Field) -> String {
        switch field.type {
        case .bool: "\(function)((\(value))::integer)::boolean"
        case .json: "\(function)((\(value))::text COLLATE \"C\")"
        case let type where type.isTextual: "\(function)(\(value) COLLATE \"C\")"
        default: "\(function)(\(value))"
        }
    }

    package func groupKey(_ sql: String, _ field: Field) -> String {
        field.type == .json ? "(\(sql))::text COLLATE \"C\"" : field.type.isTextual ? "\(sql) COLLATE \"C\"" : sql
    }

    package func nullsFirst(_ key: String) -> String { key + " NULLS FIRST" }
    package func timestamp(_ sql: String) -> String { "(\(sql))::timestamptz" }
    package func lastSerial(_ table: String) -> String {
        "coalesce(pg_sequence_last_value(pg_get_serial_sequence(\(table), 'id')), 0)"
    }
    package func secondsSince(_ column: String) -> String {
        "extract(epoch FROM clock_timestamp() - (\(column))::timestamptz)::double precision"
    }
    package func metaValue(_ sql: String) -> String { "(\(sql))::text" }
    package var changeWeight: String { "coalesce(span, 1)" }
    package var changeSpan: String { "c.span" }
    /// A run's identifiers are one a line.
    package func runNames(_ sql: String) -> String? {
        "(c.span IS NOT NULL AND strpos(E'\\n' || c.identifier || E'\\n', E'\\n' || \(sql) || E'\\n') > 0)"
    }
    package var unlimited: String { "ALL" }
    package func bytes(_ sql: String) -> String { "convert_to(\(sql), 'UTF8')" }
    package func text(ofBytes column: String) -> String { "convert_from(\(column), 'UTF8')" }
    /// As text: a date, a json value and a double come as SQLite gives them.
    package func selectField(_ column: String, _ field: Field) -> String { column + "::text" }
    /// A json field's value is bound as text: cast, or PostgreSQL refuses it.
    package func bindField(_ sql: String, _ field: Field) -> String { field.type == .json ? sql + "::json" : sql }
    package func recordKey(_ entity: EntitySchema) -> RecordKeyColumns {
        RecordKeyColumns(
            select: entity.identifierIndexes.map {
                selectField(PostgresSQL.quote(entity.fields[$0].name), entity.fields[$0])
            },
            match: entity.identifier.map(PostgresSQL.quote), order: tieBreak(entity).joined(separator: ", "))
    }

    /// The PostgreSQL column type of a field's values (as the PostgreSQL backend creates them).
    static func columnType(_ type: FieldType) -> String {
        switch type {
        case .string, .date, .json: "text"
        case .int: "bigint"
        case .double: "double precision"
        case .bool: "boolean"
        }
    }

    /// An NSPredicate LIKE pattern (`*` any run, `?` one character, `\*` and
    /// `\?` literal) as a PostgreSQL LIKE pattern (`%`, `_`, escaped with `\`).
    static func like(fromLike pattern: String) -> String {
        var out = ""
        var escaped = false
        for ch in pattern {
            if escaped {
                switch ch {
                case "%", "_", "\\": out += "\\" + String(ch)
                default: out.append(ch)
                }
                escaped = false
                continue
            }
            switch ch {
            case "\\": escaped = true
            case "*": out += "%"
            case "?": out += "_"
            case "%", "_": out += "\\" + String(ch)
            default: out.append(ch)
            }
        }
        if escaped { out += "\\\\" }
        return out
    }
}

extension SQLDialect where Self == PostgreSQLDialect {
    /// PostgreSQL's SQL.
    package static var postgresql: PostgreSQLDialect { PostgreSQLDialect() }
}
