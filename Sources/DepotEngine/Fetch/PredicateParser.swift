/// A parsed predicate, before it is checked against an entity.
indirect enum PredicateExpression: Equatable {
    case and(PredicateExpression, PredicateExpression)
    case or(PredicateExpression, PredicateExpression)
    case not(PredicateExpression)
    case constant(Bool)
    case comparison(Comparison)

    struct Comparison: Equatable {
        var lhs: Operand
        var op: Operator
        var options: String       // "", "c", "d", "cd"
        var rhs: Operand
        var position: Int
    }

    enum Operand: Equatable {
        case field(String, position: Int)
        case literal(Value, position: Int)
        case variable(String, position: Int)
        case list([Operand], position: Int)

        var position: Int {
            switch self {
            case .field(_, let p), .literal(_, let p), .variable(_, let p), .list(_, let p): p
            }
        }
    }

    enum Operator: String, Equatable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case contains = "CONTAINS"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case like = "LIKE"
        case `in` = "IN"
        case between = "BETWEEN"

        var isStringOperator: Bool {
            self == .contains || self == .beginsWith || self == .endsWith || self == .like
        }

        /// The operator with its operands swapped: `5 < x` is `x > 5`.
        var flipped: Operator? {
            switch self {
            case .equal, .notEqual: self
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            default: nil
            }
        }
    }
}

/// Parses the NSPredicate format-string syntax by recursive descent.
///
/// ```
/// expression := or
/// or         := and (("OR" | "||") and)*
/// and        := not (("AND" | "&&") not)*
/// not        := ("NOT" | "!") not | primary
/// primary    := "(" expression ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
/// comparison := operand operator options? operand
/// operand    := field | `field` | string | number | true | false | nil | $name | "{" operand, … "}"
/// ```
struct PredicateParser {
    private var tokens: [PredicateLexer.Token]
    private var i = 0

    private static let keywords: Set<String> = [
        "AND", "OR", "NOT", "IN", "BETWEEN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE",
        "TRUE", "FALSE", "YES", "NO", "NIL", "NULL", "TRUEPREDICATE", "FALSEPREDICATE",
    ]

    /// Parses `text`.
    ///
    /// - Throws: ``DepotError/Code/invalidPredicate`` with the position and
    ///   what was expected there.
    static func parse(_ text: String) throws -> PredicateExpression {
        var parser = PredicateParser(tokens: try PredicateLexer.tokenize(text))
        if parser.current.kind == .end {
            throw DepotError(.invalidPredicate, "the predicate is empty", position: 1)
        }
        let e = try parser.expression()
        guard parser.current.kind == .end else {
            throw parser.error("expected AND, OR or the end of the predicate, found \(parser.describe(parser.current))")
        }
        return e
    }

    private init(tokens: [PredicateLexer.Token]) { self.tokens = tokens }

    private var current: PredicateLexer.Token { tokens[i] }

    private func error(_ message: String) -> DepotError {
        DepotError(.invalidPredicate, message, position: current.position)
    }

    private func keyword(_ t: PredicateLexer.Token) -> String? {
        if case .identifier(let w) = t.kind, Self.keywords.contains(w.uppercased()) { return w.uppercased() }
        return nil
    }

    private func describe(_ t: PredicateLexer.Token) -> String {
        switch t.kind {
        case .end: "the end of the predicate"
        case .identifier(let w): JSONText.quoted(w)
        case .quotedField(let w): "`\(w)`"
        case .string(let s): "the string \(JSONText.quoted(s))"
        case .number(let n): "the number \(n)"
        case .variable(let v): "$\(v)"
        case .op(let o): JSONText.quoted(o)
        case .lparen: "\"(\""
        case .rparen: "\")\""
        case .lbrace: "\"{\""
        case .rbrace: "\"}\""
        case .comma: "\",\""
        case .options(let o): "[\(o)]"
        }
    }

    private mutating func expression() throws -> PredicateExpression {
        var lhs = try conjunction()
        while keyword(current) == "OR" || current.kind == .op("||") {
            i += 1
            lhs = .or(lhs, try conjunction())
        }
        return lhs
    }

    private mutating func conjunction() throws -> PredicateExpression {
        var lhs = try negation()
        while keyword(current) == "AND" || current.kind == .op("&&") {
            i += 1
            lhs = .and(lhs, try negation())
        }
        return lhs
    }

    private mutating func negation() throws -> PredicateExpression {
        if keyword(current) == "NOT" || current.kind == .op("!") {
            i += 1
            return .not(try negation())
        }
        return try primary()
    }

    private mutating func primary() throws -> PredicateExpression {
        if current.kind == .lparen {
            i += 1
            let e = try expression()
            guard current.kind == .rparen else {
                throw error("expected \")\" to close the parenthesis, found \(describe(current))")
            }
            i += 1
            return e
        }
        switch keyword(current) {
        case "TRUEPREDICATE": i += 1; return .constant(true)
        case "FALSEPREDICATE": i += 1; return .constant(false)
        default: break
        }
        let position = current.position
        let lhs = try operand(context: "a field name, a value or \"(\"")
        let (op, options) = try comparisonOperator()
        let rhs = try operand(context: "a value after \(op.rawValue)")
        return .comparison(.init(lhs: lhs, op: op, options: options, rhs: rhs, position: position))
    }

    private mutating func comparisonOperator() throws -> (PredicateExpression.Operator, String) {
        let op: PredicateExpression.Operator
        switch current.kind {
        case .op(let o) where PredicateExpression.Operator(rawValue: o) != nil:
            op = PredicateExpression.Operator(rawValue: o)!
        case .identifier(let w):
            guard let o = PredicateExpression.Operator(rawValue: w.uppercased()) else {
                throw error("expected an operator (==, !=, <, <=, >, >=, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, "
                    + "IN, BETWEEN), found \(describe(current))")
            }
            op = o
        default:
            throw error("expected an operator (==, !=, <, <=, >, >=, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, "
                + "IN, BETWEEN), found \(describe(current))")
        }
        i += 1
        if case .options(let o) = current.kind {
            i += 1
            return (op, o.contains("c") && o.contains("d") ? "cd" : o.contains("c") ? "c" : "d")
        }
        return (op, "")
    }

    private mutating func operand(context: String) throws -> PredicateExpression.Operand {
        let t = current
        switch t.kind {
        case .string(let s): i += 1; return .literal(.string(s), position: t.position)
        case .number(let n):
            i += 1
            if let v = Int64(n) { return .literal(.int(v), position: t.position) }
            return .literal(.double(Double(n)!), position: t.position)
        case .variable(let v): i += 1; return .variable(v, position: t.position)
        case .quotedField(let f): i += 1; return .field(f, position: t.position)
        case .identifier(let w):
            switch keyword(t) {
            case "TRUE", "YES": i += 1; return .literal(.bool(true), position: t.position)
            case "FALSE", "NO": i += 1; return .literal(.bool(false), position: t.position)
            case "NIL", "NULL": i += 1; return .literal(.null, position: t.position)
            case nil: i += 1; return .field(w, position: t.position)
            case let k?:
                throw error("expected \(context), found the keyword \(k) (write a field of that name as `\(w)`)")
            }
        case .lbrace:
            i += 1
            var items: [PredicateExpression.Operand] = []
            if current.kind == .rbrace { i += 1; return .list(items, position: t.position) }
            while true {
                let item = try operand(context: "a value in the list")
                if case .list = item { throw error("a list cannot contain a list") }
                items.append(item)
                if current.kind == .comma { i += 1; continue }
                guard current.kind == .rbrace else {
                    throw error("expected \",\" or \"}\" in the list, found \(describe(current))")
                }
                i += 1
                return .list(items, position: t.position)
            }
        default:
            throw error("expected \(context), found \(describe(t))")
        }
    }
}
