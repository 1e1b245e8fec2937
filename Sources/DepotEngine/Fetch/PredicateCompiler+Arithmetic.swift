import Foundation

/// Arithmetic, functions and TERNARY (DESIGN §17), in predicates and
/// computed values: checked against the schema at the door (a type error
/// names its position), compiled to SQL with every value bound, the same
/// on both dialects.
///
/// The semantics, which ``Arithmetic/evaluate(_:field:variables:now:)``
/// follows in memory: a null operand makes a null; `+`, `-`, `*` of two
/// ints give an int, of a double a double; `/` always a double; a division
/// or modulus by zero is null; `sqrt:` of a negative number is null;
/// `floor:`, `ceiling:` and `trunc:` of an int are that int; an integer
/// out of the 64-bit range becomes a double (as SQLite computes it), which
/// an `int` field refuses; `uppercase:`
/// and `lowercase:` change the letters a to z, whatever the database's
/// locale, so that both backends give the same text.
extension PredicateCompiler {
    /// How deep the SQL of one expression may nest (each operator of a
    /// chain is one level): SQLite evaluates expressions up to 1,000 deep.
    static let maxExpressionDepth = 250

    /// The functions an expression may call, with their arguments' count.
    static let functions: [String: Int] = [
        "abs:": 1, "sqrt:": 1, "floor:": 1, "ceiling:": 1, "trunc:": 1, "uppercase:": 1, "lowercase:": 1,
        "length:": 1, "modulus:by:": 2, "now": 0
    ]

    /// An expression's SQL, the type of its values (nil: it is always nil)
    /// and how deep its SQL nests.
    struct Computed {
        var sql: String
        var type: FieldType?
        var depth: Int
    }

    /// The SQL of an operand of an expression.
    mutating func computed(_ o: PredicateExpression.Operand, nesting: Int) throws -> Computed {
        if let v = try ExpressionEvaluator.constant(o, variables: variables, now: now) {
            if v.isNull { return Computed(sql: "NULL", type: nil, depth: 1) }
            return Computed(sql: try bind(v, at: o.position), type: ExpressionEvaluator.type(of: v), depth: 1)
        }
        switch o {
        case .arithmetic(let a, let position):
            let c = try arithmetic(a, at: position, nesting: nesting)
            guard c.depth <= Self.maxExpressionDepth else { throw Self.tooDeep(at: position) }
            return c
        case .list(_, let position):
            throw mismatch("a list is not a value to compute with", at: position)
        default:
            guard let (sql, field) = try scalar(o, nesting: nesting) else {
                throw mismatch("expected a value to compute with", at: o.position)
            }
            return Computed(sql: sql, type: field.type, depth: 1)
        }
    }

    static func tooDeep(at position: Int) -> DepotError {
        DepotError(
            .invalidPredicate,
            "the expression nests more than \(maxExpressionDepth) operations deep here, "
                + "more than the database evaluates; split it", position: position)
    }

    mutating func arithmetic(_ a: PredicateExpression.Arithmetic, at position: Int, nesting: Int) throws -> Computed {
        switch a {
        case .chain(let first, let steps):
            var acc = try numeric(first, nesting: nesting, for: steps[0].op)
            for step in steps {
                let next = try numeric(step.operand, nesting: nesting, for: step.op)
                let depth = max(acc.depth, next.depth) + 1
                // Checked as it grows: a chain of a million terms stops here, early.
                guard depth <= Self.maxExpressionDepth else { throw Self.tooDeep(at: step.position) }
                if step.op == "/" {
                    acc = Computed(
                        sql: "(\(dialect.real(acc.sql)) / NULLIF(\(next.sql), 0))", type: .double, depth: depth)
                } else {
                    let integer = acc.type == .int && next.type == .int
                    acc = Computed(
                        sql: integer
                            ? dialect.integerArithmetic(acc.sql, step.op, next.sql)
                            : "(\(acc.sql) \(step.op) \(next.sql))", type: integer ? .int : .double, depth: depth)
                }
            }
            return acc
        case .negate(let x):
            let c = try numeric(x, nesting: nesting, for: "-")
            let sql = c.type == .int ? dialect.integerArithmetic(nil, "-", c.sql) : "(-\(c.sql))"
            return Computed(sql: sql, type: c.type, depth: c.depth + 1)
        case .ternary(let predicate, let yes, let no):
            let condition = try compile(predicate, negated: false, nesting: nesting + 1)
            let a = try computed(yes, nesting: nesting), b = try computed(no, nesting: nesting)
            let type: FieldType?
            switch (a.type, b.type) {
            case (nil, let t), (let t, nil): type = t
            case (let x?, let y?) where x == y: type = x
            case (let x?, let y?) where x.isNumeric && y.isNumeric: type = .double
            case (let x?, let y?):
                throw mismatch(
                    "TERNARY's values must be of one type, not \(x.rawValue) and \(y.rawValue)", at: position)
            }
            return Computed(
                sql: "(CASE WHEN \(condition) THEN \(a.sql) ELSE \(b.sql) END)", type: type,
                depth: max(a.depth, b.depth) + 1)
        case .function(let name, let arguments):
            return try function(name, arguments, at: position, nesting: nesting)
        }
    }

    private mutating func function(
        _ name: String, _ arguments: [PredicateExpression.Operand], at position: Int, nesting: Int
    ) throws -> Computed {
        guard let count = Self.functions[name] else {
            throw DepotError(
                .invalidPredicate,
                "unknown function \(name); Depot computes with "
                    + Self.functions.keys.sorted().map { $0 == "now" ? "now()" : $0 }.joined(separator: ", ")
                    + " and TERNARY(predicate, a, b)", position: position)
        }
        guard arguments.count == count else {
            throw DepotError(
                .invalidPredicate,
                "\(name) takes \(count) argument\(count == 1 ? "" : "s"), not \(arguments.count)", position: position)
        }
        if name == "now" {
            return Computed(sql: try bind(.string(now), at: position), type: .date, depth: 1)
        }
        let x = try computed(arguments[0], nesting: nesting)
        func expect(_ types: [FieldType], _ what: String) throws {
            guard let t = x.type else { return }
            guard types.contains(t) else {
                throw mismatch("\(name) takes \(what), not \(t.rawValue)", at: arguments[0].position)
            }
        }
        let depth = x.depth + 1
        switch name {
        case "abs:":
            try expect([.int, .double], "a number")
            return Computed(
                sql: x.type == .int ? dialect.integerAbs(x.sql) : "abs(\(x.sql))", type: x.type, depth: depth)
        case "sqrt:":
            try expect([.int, .double], "a number")
            return Computed(sql: dialect.squareRoot(x.sql), type: .double, depth: depth)
        case "floor:", "ceiling:", "trunc:":
            try expect([.int, .double], "a number")
            if x.type == .int { return x }
            let f = ["floor:": "floor", "ceiling:": "ceil", "trunc:": "trunc"][name]!
            return Computed(sql: "\(f)(\(dialect.real(x.sql)))", type: .double, depth: depth)
        case "uppercase:", "lowercase:":
            try expect([.string], "a string")
            return Computed(sql: dialect.asciiCase(x.sql, upper: name == "uppercase:"), type: .string, depth: depth)
        case "length:":
            try expect([.string], "a string")
            return Computed(sql: "length(\(x.sql))", type: .int, depth: depth)
        case "modulus:by:":
            let y = try computed(arguments[1], nesting: nesting)
            for (c, argument) in [(x, arguments[0]), (y, arguments[1])] where c.type != nil && c.type != .int {
                throw mismatch("modulus:by: takes integers, not \(c.type!.rawValue)", at: argument.position)
            }
            return Computed(
                sql: "(\(x.sql) % NULLIF(\(y.sql), 0))", type: .int, depth: max(x.depth, y.depth) + 1)
        default:
            preconditionFailure("a function listed but not compiled: \(name)")
        }
    }

    /// An operand of an arithmetic operator `op`: a number (or nil).
    private mutating func numeric(_ o: PredicateExpression.Operand, nesting: Int, for op: String) throws -> Computed {
        let c = try computed(o, nesting: nesting)
        if let t = c.type, !t.isNumeric {
            throw mismatch("\(op) takes numbers, but this is \(t.rawValue)", at: o.position)
        }
        return c
    }
}
