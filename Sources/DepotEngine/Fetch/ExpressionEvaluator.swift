import Foundation

/// Computes in memory, as its SQL does in the store (``PredicateCompiler``'s
/// arithmetic), the value of an expression that reads no record: the
/// compiler binds it as one value.
enum ExpressionEvaluator {
    /// What evaluating needs: the arguments, the time `now()` stands for.
    private struct Context {
        var variables: [String: Value]
        var now: String
    }

    /// The value of `o` when it reads no record; nil when it does (or holds
    /// a part only SQL computes, like a TERNARY whose predicate reads).
    ///
    /// - Throws: ``DepotError`` `typeMismatch` for operands of the wrong type,
    ///   `invalidPredicate` for a variable without a value, at their position.
    static func constant(_ o: PredicateExpression.Operand, variables: [String: Value], now: String) throws -> Value? {
        try evaluate(o, in: Context(variables: variables, now: now))
    }

    /// The type of a value's field, nil for null.
    static func type(of v: Value) -> FieldType? {
        switch v {
        case .null: nil
        case .int: .int
        case .double: .double
        case .bool: .bool
        case .string: .string
        }
    }

    /// The value of `o`, nil when a part of it reads a record.
    ///
    /// - Throws: ``DepotError`` `typeMismatch` for operands of the wrong
    ///   type, `invalidPredicate` for an unknown function or a variable
    ///   without a value, each with its position.
    private static func evaluate(_ o: PredicateExpression.Operand, in context: Context) throws -> Value? {
        switch o {
        case .literal(let v, _): return v
        case .variable(let name, let position):
            // A SUBQUERY variable's key path reads its element.
            if name.contains(".") { return nil }
            guard let v = context.variables[name] else {
                throw DepotError(
                    .invalidPredicate, "no value was given for $\(name); pass it in the arguments", position: position)
            }
            return v
        case .field, .list, .subquery: return nil
        case .arithmetic(let a, let position): return try evaluate(a, at: position, in: context)
        }
    }

    private static func mismatch(_ message: String, at position: Int) -> DepotError {
        DepotError(.typeMismatch, message, position: position)
    }

    private static func evaluate(_ a: PredicateExpression.Arithmetic, at position: Int, in context: Context) throws
        -> Value?
    {
        func number(_ o: PredicateExpression.Operand, for op: String) throws -> Value? {
            guard let v = try evaluate(o, in: context) else { return nil }
            switch v {
            case .null, .int, .double: return v
            default: throw mismatch("\(op) takes numbers, but this is \(v.kindName)", at: o.position)
            }
        }
        switch a {
        case .chain(let first, let steps):
            guard var acc = try number(first, for: steps[0].op) else { return nil }
            for step in steps {
                guard let next = try number(step.operand, for: step.op) else { return nil }
                acc = combine(acc, step.op, next)
            }
            return acc
        case .negate(let x):
            guard let v = try number(x, for: "-") else { return nil }
            switch v {
            case .int(let i): return i == .min ? .double(-Double(i)) : .int(-i)
            case .double(let d): return .double(-d)
            default: return .null
            }
        case .ternary:
            // Its predicate is SQL's to evaluate.
            return nil
        case .function(let name, let arguments):
            guard let count = PredicateCompiler.functions[name], arguments.count == count else { return nil }
            if name == "now" { return .string(context.now) }
            guard let x = try evaluate(arguments[0], in: context) else { return nil }
            func expect(_ ok: Bool, _ what: String) throws {
                guard ok || x.isNull else {
                    throw mismatch("\(name) takes \(what), not \(x.kindName)", at: arguments[0].position)
                }
            }
            switch name {
            case "abs:", "sqrt:", "floor:", "ceiling:", "trunc:":
                try expect(x.isNumber, "a number")
                switch (name, x) {
                case (_, .null): return .null
                case ("abs:", .int(let i)): return i == .min ? .double(-Double(i)) : .int(Swift.abs(i))
                case ("abs:", .double(let d)): return .double(Swift.abs(d))
                case ("sqrt:", _):
                    let d = x.asDouble
                    return d < 0 ? .null : .double(d.squareRoot())
                case (_, .int): return x
                case ("floor:", .double(let d)): return .double(d.rounded(.down))
                case ("ceiling:", .double(let d)): return .double(d.rounded(.up))
                case ("trunc:", .double(let d)): return .double(d.rounded(.towardZero))
                default: return nil
                }
            case "uppercase:", "lowercase:", "length:":
                guard case .string(let s) = x else {
                    try expect(false, "a string")
                    return .null
                }
                // ASCII letters only, as SQLite's upper() and lower() do.
                switch name {
                case "uppercase:":
                    return .string(String(String.UnicodeScalarView(s.unicodeScalars.map(ascii(upper: true)))))
                case "lowercase:":
                    return .string(String(String.UnicodeScalarView(s.unicodeScalars.map(ascii(upper: false)))))
                default: return .int(Int64(s.unicodeScalars.count))
                }
            case "modulus:by:":
                guard let y = try evaluate(arguments[1], in: context) else { return nil }
                for (v, argument) in [(x, arguments[0]), (y, arguments[1])] {
                    guard case .int = v else {
                        if v.isNull { continue }
                        throw mismatch("modulus:by: takes integers, not \(v.kindName)", at: argument.position)
                    }
                }
                guard case .int(let i) = x, case .int(let j) = y, j != 0 else { return .null }
                return .int(j == -1 ? 0 : i % j)
            default:
                return nil
            }
        }
    }

    private static func ascii(upper: Bool) -> (Unicode.Scalar) -> Unicode.Scalar {
        { c in
            guard c.isASCII else { return c }
            if upper, ("a"..."z").contains(c) { return Unicode.Scalar(c.value - 32)! }
            if !upper, ("A"..."Z").contains(c) { return Unicode.Scalar(c.value + 32)! }
            return c
        }
    }

    /// `a op b` for two numbers (or nulls), as SQL computes it.
    static func combine(_ a: Value, _ op: String, _ b: Value) -> Value {
        if a.isNull || b.isNull { return .null }
        if op == "/" {
            let divisor = b.asDouble
            return divisor == 0 ? .null : .double(a.asDouble / divisor)
        }
        if case .int(let x) = a, case .int(let y) = b {
            // Out of range, SQL gives the double (SQLite's arithmetic does).
            let (result, overflow) =
                switch op {
                case "+": x.addingReportingOverflow(y)
                case "-": x.subtractingReportingOverflow(y)
                default: x.multipliedReportingOverflow(by: y)
                }
            if !overflow { return .int(result) }
        }
        let x = a.asDouble, y = b.asDouble
        switch op {
        case "+": return .double(x + y)
        case "-": return .double(x - y)
        default: return .double(x * y)
        }
    }
}

extension Value {
    fileprivate var isNumber: Bool {
        switch self {
        case .int, .double: true
        default: false
        }
    }

    fileprivate var asDouble: Double {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: .nan
        }
    }
}
