/// SQL text with its bound values, in order.
struct SQLFragment: Sendable {
    var sql: String
    var arguments: [Value]

    static let alwaysTrue = SQLFragment(sql: "1", arguments: [])
}

/// Checks a parsed predicate against an entity and compiles it to SQL.
///
/// Values are always bound as parameters, never pasted into the SQL text.
/// Field names are quoted. `[c]`/`[d]` comparisons fold both sides with
/// ``TextFolding``.
///
/// What it writes stays inside SQLite's own limits, so that no predicate a
/// user can write fails in SQLite's parser: `NOT` is pushed down to the
/// comparisons (De Morgan's laws hold in SQL's three-valued logic), long
/// `AND`/`OR` chains are written as balanced groups of at most
/// ``chainWidth`` terms (SQLite's expression trees may be 1,000 deep, its
/// parser stack about 100 entries), a predicate whose `AND`/`OR` nesting is
/// still deeper than ``maxNesting`` is refused with its position, long `IN`
/// lists are bound as one JSON array, and more than ``maxArguments`` bound
/// values are refused with a hint.
struct PredicateCompiler {
    /// The most terms one SQL `AND`/`OR` chain holds; longer chains are grouped.
    static let chainWidth = 16
    /// The deepest nesting of parentheses the SQL may have. SQLite's parser
    /// (a stack of 100 entries) overflows at 26 levels with the heaviest
    /// comparison (`NOT … IN (SELECT … json_each(?))`); 16 leaves room for the
    /// subqueries that counts, aggregates and batch writes wrap around it.
    static let maxNesting = 16
    /// The most values one predicate may bind (SQLite takes 32,766 per statement;
    /// the queries around a predicate bind a few of their own).
    static let maxArguments = 32_000
    /// `IN` lists longer than this are bound as one JSON array read by `json_each`.
    static let longList = 64
    /// SQLite's limit on the length of a LIKE or GLOB pattern, in bytes.
    static let maxPattern = 50_000

    private let entity: EntitySchema
    private let variables: [String: Value]
    private var arguments: [Value] = []

    /// Compiles `text` for `entity`; `nil` or blank text matches every record.
    ///
    /// - Throws: ``DepotError`` with code `invalidPredicate`, `unknownField` or
    ///   `typeMismatch` and the position of the problem.
    static func compile(_ text: String?, entity: EntitySchema,
                        arguments: [String: Value] = [:]) throws -> SQLFragment {
        guard let text, !text.trimmingWhitespace().isEmpty else { return .alwaysTrue }
        let expression = try PredicateParser.parse(text)
        var compiler = PredicateCompiler(entity: entity, variables: arguments)
        let sql = try compiler.compile(expression, negated: false, nesting: 0)
        return SQLFragment(sql: sql, arguments: compiler.arguments)
    }

    private init(entity: EntitySchema, variables: [String: Value]) {
        self.entity = entity
        self.variables = variables
    }

    /// The SQL of `e`, or of `NOT e` when `negated`, standing inside
    /// `nesting` parentheses; a group comes back in parentheses of its own.
    private mutating func compile(_ e: PredicateExpression, negated: Bool, nesting: Int) throws -> String {
        switch e {
        case .constant(let b, _):
            return b != negated ? "1" : "0"
        case .comparison(let c):
            let sql = try comparison(c)
            return negated ? "NOT \(sql)" : sql
        case .not(let x):
            return try compile(x, negated: !negated, nesting: nesting)
        case .and(let terms), .or(let terms):
            // NOT (a AND b) is NOT a OR NOT b; NOT (a OR b) is NOT a AND NOT b.
            var isAnd = if case .and = e { true } else { false }
            if negated { isAnd.toggle() }
            // Terms that turn into the same operator once negated join this chain.
            var flat: [(PredicateExpression, Bool)] = []
            Self.collect(terms, negated: negated, isAnd: isAnd, into: &flat)
            var levels = 1
            var width = flat.count
            while width > Self.chainWidth {
                width = (width + Self.chainWidth - 1) / Self.chainWidth
                levels += 1
            }
            guard nesting + levels <= Self.maxNesting else {
                throw DepotError(.invalidPredicate, "the predicate nests AND and OR more than \(Self.maxNesting) levels "
                    + "deep here, more than SQLite can evaluate; simplify it", position: e.position)
            }
            var parts = try flat.map { try compile($0.0, negated: $0.1, nesting: nesting + levels) }
            let op = isAnd ? " AND " : " OR "
            while parts.count > Self.chainWidth {
                parts = stride(from: 0, to: parts.count, by: Self.chainWidth).map {
                    "(" + parts[$0..<min($0 + Self.chainWidth, parts.count)].joined(separator: op) + ")"
                }
            }
            return "(" + parts.joined(separator: op) + ")"
        }
    }

    /// The terms of a chain: those of nested groups that are, once negated,
    /// the same operator join it; each with whether it is negated.
    private static func collect(_ terms: [PredicateExpression], negated: Bool, isAnd: Bool,
                                into flat: inout [(PredicateExpression, Bool)]) {
        for term in terms {
            var t = term, n = negated
            while case .not(let inner) = t {
                t = inner
                n.toggle()
            }
            switch t {
            case .and(let inner) where isAnd != n, .or(let inner) where isAnd == n:
                collect(inner, negated: n, isAnd: isAnd, into: &flat)
            default:
                flat.append((t, n))
            }
        }
    }

    private func mismatch(_ message: String, at position: Int) -> DepotError {
        DepotError(.typeMismatch, message, position: position)
    }

    private func field(_ name: String, at position: Int) throws -> Field {
        do { return try entity.field(named: name) } catch var error as DepotError {
            error.position = position
            throw error
        }
    }

    /// The value of a literal or a variable.
    private func value(_ operand: PredicateExpression.Operand) throws -> Value {
        switch operand {
        case .literal(let v, _): return v
        case .variable(let name, let position):
            guard let v = variables[name] else {
                throw DepotError(.invalidPredicate, "no value was given for $\(name); pass it in the arguments",
                                 position: position)
            }
            return v
        case .field, .list:
            preconditionFailure("value(_:) takes literals and variables")
        }
    }

    private func describe(_ operand: PredicateExpression.Operand, _ v: Value) -> String {
        if case .variable(let name, _) = operand { return "$\(name) (\(v.kindName) \(v))" }
        return "\(v.kindName) \(v)"
    }

    /// Converts a value compared with `field` to the stored form, or throws.
    private func convert(_ operand: PredicateExpression.Operand, for field: Field, textual: Bool) throws -> Value {
        let v = try value(operand)
        let name = JSONText.quoted(field.name)
        let bad = mismatch("field \(name) is \(field.type.rawValue), but \(describe(operand, v)) is compared with it",
                           at: operand.position)
        switch (field.type, v) {
        case (_, .null): return .null
        case (.string, .string), (.json, .string), (.int, .int), (.double, .double), (.bool, .bool),
             (.int, .double):
            return v
        case (.double, .int(let i)): return .double(Double(i))
        case (.date, .string(let s)):
            if textual { return v }
            guard let canonical = DateValue.canonical(s) else {
                throw mismatch("\(JSONText.quoted(s)) is not an ISO 8601 date or date-time "
                    + "(like 2025-03-14 or 2025-03-14T09:30:00Z), so it cannot be compared with date field \(name)",
                    at: operand.position)
            }
            return .string(canonical)
        default: throw bad
        }
    }

    /// Appends `v` to the arguments; the operand's `position` names it when
    /// there are too many.
    private mutating func bind(_ v: Value, at position: Int) throws -> String {
        guard arguments.count < Self.maxArguments else {
            throw DepotError(.invalidPredicate, "the predicate holds more than \(Self.maxArguments) values, more than "
                + "SQLite takes in one query; write a long list of values as field IN {…}, which takes any number",
                position: position)
        }
        arguments.append(v)
        return "?"
    }

    private mutating func comparison(_ c0: PredicateExpression.Comparison) throws -> String {
        var c = c0
        // `5 < budget` reads as `budget > 5`.
        if case .field = c.rhs, !isField(c.lhs), let flipped = c.op.flipped {
            swap(&c.lhs, &c.rhs)
            c.op = flipped
        }
        guard case .field(let name, let fieldPosition) = c.lhs else {
            throw DepotError(.invalidPredicate, "the left side of \(c.op.rawValue) must be a field name",
                             position: c.lhs.position)
        }
        let field = try field(name, at: fieldPosition)
        let quotedName = JSONText.quoted(field.name)
        var flags = 0
        if c.options.contains("c") { flags |= TextFolding.caseInsensitive }
        if c.options.contains("d") { flags |= TextFolding.diacriticInsensitive }
        if flags != 0, !field.type.isTextual {
            throw mismatch("[\(c.options)] applies to text fields, but \(quotedName) is \(field.type.rawValue)",
                           at: c.position)
        }
        if c.op.isStringOperator, !field.type.isTextual {
            throw mismatch("\(c.op.rawValue) applies to text fields, but \(quotedName) is \(field.type.rawValue)",
                           at: c.position)
        }
        if field.type == .bool, ![.equal, .notEqual, .in].contains(c.op) {
            throw mismatch("bool field \(quotedName) can only be compared with ==, != or IN", at: c.position)
        }
        let column = flags == 0 ? SQL.quote(field.name) : "depot_fold(\(SQL.quote(field.name)), \(flags))"
        func folded(_ v: Value) -> Value {
            if flags != 0, case .string(let s) = v { return .string(TextFolding.fold(s, flags: flags)) }
            return v
        }

        // Field against field.
        if case .field(let otherName, let otherPosition) = c.rhs {
            let other = try self.field(otherName, at: otherPosition)
            let compatible = field.type == other.type || (field.type.isNumeric && other.type.isNumeric)
            guard compatible else {
                throw mismatch("\(quotedName) is \(field.type.rawValue) and \(JSONText.quoted(other.name)) is "
                    + "\(other.type.rawValue): they cannot be compared", at: c.position)
            }
            let otherColumn = flags == 0 ? SQL.quote(other.name) : "depot_fold(\(SQL.quote(other.name)), \(flags))"
            switch c.op {
            case .equal: return "(\(column) = \(otherColumn))"
            case .notEqual: return "(\(column) IS NOT \(otherColumn))"
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                return "(\(column) \(c.op.rawValue) \(otherColumn))"
            default:
                throw DepotError(.invalidPredicate, "\(c.op.rawValue) needs a value on its right, not a field",
                                 position: c.rhs.position)
            }
        }

        switch c.op {
        case .in, .between:
            guard case .list(let items, let listPosition) = c.rhs else {
                throw DepotError(.invalidPredicate, "\(c.op.rawValue) needs a list in braces, like {1, 2}",
                                 position: c.rhs.position)
            }
            var values: [Value] = []
            for item in items {
                if case .field = item {
                    throw DepotError(.invalidPredicate, "a list holds values, not fields", position: item.position)
                }
                let v = try convert(item, for: field, textual: false)
                if v.isNull {
                    throw mismatch("nil cannot be in a list; use \(field.name) == nil", at: item.position)
                }
                values.append(folded(v))
            }
            if c.op == .between {
                guard values.count == 2 else {
                    throw DepotError(.invalidPredicate, "BETWEEN needs exactly two values, like {100, 500}",
                                     position: listPosition)
                }
                return "(\(column) BETWEEN \(try bind(values[0], at: listPosition)) AND \(try bind(values[1], at: listPosition)))"
            }
            if values.isEmpty { return "0" }
            if values.count > Self.longList {
                // One bound JSON array instead of a parameter per value: any length fits.
                var json = "["
                for (k, v) in values.enumerated() {
                    if k > 0 { json += "," }
                    JSONText.append(v, to: &json)
                }
                json += "]"
                return "(\(column) IN (SELECT value FROM json_each(\(try bind(.string(json), at: listPosition)))))"
            }
            return "(\(column) IN (" + (try values.map { try bind($0, at: listPosition) }).joined(separator: ", ") + "))"
        default:
            break
        }
        if case .list = c.rhs {
            throw DepotError(.invalidPredicate, "\(c.op.rawValue) compares with one value, not a list",
                             position: c.rhs.position)
        }
        let v = folded(try convert(c.rhs, for: field, textual: c.op.isStringOperator))
        if v.isNull {
            switch c.op {
            case .equal: return "(\(SQL.quote(field.name)) IS NULL)"
            case .notEqual: return "(\(SQL.quote(field.name)) IS NOT NULL)"
            default:
                throw mismatch("nil can only be compared with == or !=", at: c.rhs.position)
            }
        }
        let at = c.rhs.position
        switch c.op {
        case .equal: return "(\(column) = \(try bind(v, at: at)))"
        case .notEqual: return "(\(column) IS NOT \(try bind(v, at: at)))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual: return "(\(column) \(c.op.rawValue) \(try bind(v, at: at)))"
        case .contains: return "(instr(\(column), \(try bind(v, at: at))) > 0)"
        case .beginsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            return "(substr(\(column), 1, \(s.unicodeScalars.count)) = \(try bind(v, at: at)))"
        case .endsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            if s.isEmpty { return "(\(column) IS NOT NULL)" }
            return "(substr(\(column), -\(s.unicodeScalars.count)) = \(try bind(v, at: at)))"
        case .like:
            guard case .string(let s) = v else { preconditionFailure() }
            let pattern = Self.glob(fromLike: s)
            guard pattern.utf8.count <= Self.maxPattern else {
                throw DepotError(.invalidPredicate, "the LIKE pattern is longer than \(Self.maxPattern) bytes, "
                    + "more than SQLite matches; use CONTAINS, BEGINSWITH or ENDSWITH", position: at)
            }
            return "(\(column) GLOB \(try bind(.string(pattern), at: at)))"
        case .in, .between: preconditionFailure()
        }
    }

    private func isField(_ o: PredicateExpression.Operand) -> Bool {
        if case .field = o { return true }
        return false
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
