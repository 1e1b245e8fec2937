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
struct PredicateCompiler {
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
        let sql = try compiler.compile(expression)
        return SQLFragment(sql: sql, arguments: compiler.arguments)
    }

    private init(entity: EntitySchema, variables: [String: Value]) {
        self.entity = entity
        self.variables = variables
    }

    private mutating func compile(_ e: PredicateExpression) throws -> String {
        switch e {
        case .and(let l, let r): return "(\(try compile(l)) AND \(try compile(r)))"
        case .or(let l, let r): return "(\(try compile(l)) OR \(try compile(r)))"
        case .not(let x): return "(NOT \(try compile(x)))"
        case .constant(let b): return b ? "1" : "0"
        case .comparison(let c): return try comparison(c)
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

    private mutating func bind(_ v: Value) -> String {
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
                return "(\(column) BETWEEN \(bind(values[0])) AND \(bind(values[1])))"
            }
            if values.isEmpty { return "0" }
            return "(\(column) IN (" + values.map { bind($0) }.joined(separator: ", ") + "))"
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
        switch c.op {
        case .equal: return "(\(column) = \(bind(v)))"
        case .notEqual: return "(\(column) IS NOT \(bind(v)))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual: return "(\(column) \(c.op.rawValue) \(bind(v)))"
        case .contains: return "(instr(\(column), \(bind(v))) > 0)"
        case .beginsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            return "(substr(\(column), 1, \(s.unicodeScalars.count)) = \(bind(v)))"
        case .endsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            if s.isEmpty { return "(\(column) IS NOT NULL)" }
            return "(substr(\(column), -\(s.unicodeScalars.count)) = \(bind(v)))"
        case .like:
            guard case .string(let s) = v else { preconditionFailure() }
            return "(\(column) GLOB \(bind(.string(Self.glob(fromLike: s)))))"
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
