/// A parsed predicate, before it is checked against an entity.
///
/// `AND` and `OR` chains are flat (`a AND b AND (c AND d)` is one `and` of
/// four terms) and runs of `NOT` are folded, so the tree is only as deep as
/// the predicate's parentheses, which the parser bounds: no predicate can
/// make the compiler, or the tree's own deallocation, recurse without limit.
indirect enum PredicateExpression: Equatable {
    /// Every term holds; two or more terms, none of them an `and`.
    case and([PredicateExpression])
    /// Some term holds; two or more terms, none of them an `or`.
    case or([PredicateExpression])
    /// The term does not hold; never directly another `not`.
    case not(PredicateExpression)
    case constant(Bool, position: Int)
    case comparison(Comparison)

    /// The 1-based position where the expression starts.
    var position: Int {
        switch self {
        case .and(let terms), .or(let terms): terms[0].position
        case .not(let e): e.position
        case .constant(_, let p): p
        case .comparison(let c): c.position
        }
    }

    /// `terms` joined by AND (`or: false`) or OR, flattening terms of the same kind.
    static func join(_ terms: [PredicateExpression], or: Bool) -> PredicateExpression {
        if terms.count == 1 { return terms[0] }
        var flat: [PredicateExpression] = []
        flat.reserveCapacity(terms.count)
        for term in terms {
            switch (term, or) {
            case (.or(let inner), true), (.and(let inner), false): flat += inner
            default: flat.append(term)
            }
        }
        return or ? .or(flat) : .and(flat)
    }

    /// `NOT e`: `NOT NOT e` is `e`, in SQL's three-valued logic too.
    static func negate(_ e: PredicateExpression) -> PredicateExpression {
        if case .not(let inner) = e { return inner }
        return .not(e)
    }

    struct Comparison: Equatable {
        var lhs: Operand
        var op: Operator
        var options: String  // "", "c", "d", "cd"
        var rhs: Operand
        var position: Int
        /// `ANY`/`SOME`, `ALL` or `NONE` before a to-many key path.
        var quantifier: Quantifier? = nil
    }

    enum Quantifier: String, Equatable {
        // Not `none`: that would read as Optional.none where a quantifier is optional.
        case anyOf = "ANY", allOf = "ALL", noneOf = "NONE"
    }

    /// `SUBQUERY(collection, $variable, predicate).@count`.
    struct Subquery: Equatable {
        var collection: String
        var collectionPosition: Int
        var variable: String
        var predicate: PredicateExpression
        var position: Int
    }

    indirect enum Operand: Equatable {
        /// A field name or a key path (`customer.country`, `lines.@count`).
        case field(String, position: Int)
        case literal(Value, position: Int)
        /// `$name`: an argument, or inside a SUBQUERY its variable's key path (`$l.qty`).
        case variable(String, position: Int)
        case list([Operand], position: Int)
        case subquery(Subquery, position: Int)
        /// Arithmetic, a function or TERNARY over operands (DESIGN §17).
        case arithmetic(Arithmetic, position: Int)

        var position: Int {
            switch self {
            case .field(_, let p), .literal(_, let p), .variable(_, let p), .list(_, let p), .subquery(_, let p),
                .arithmetic(_, let p):
                p
            }
        }
    }

    /// A computed value, in NSExpression's syntax. A run of operators of
    /// one precedence is one `chain` (`a + b - c`), read in a loop, so that
    /// the tree is only as deep as the expression's parentheses and
    /// function calls, which the parser bounds.
    indirect enum Arithmetic: Equatable {
        /// `first` then each step's operator and operand, left to right:
        /// all `+`/`-`, or all `*`/`/`.
        case chain(Operand, [Step])
        case negate(Operand)
        /// `uppercase:(name)`, `modulus:by:(a, b)`, `now()`.
        case function(String, [Operand])
        /// `TERNARY(predicate, then, else)`.
        case ternary(PredicateExpression, Operand, Operand)
    }

    struct Step: Equatable {
        var op: String
        var operand: Operand
        var position: Int
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
/// not        := ("NOT" | "!")* primary
/// primary    := "(" expression ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
/// comparison := quantifier? operand operator options? operand
/// quantifier := "ANY" | "SOME" | "ALL" | "NONE"             (before a key path)
/// operand    := product (("+" | "-") product)*                (one chain, read in a loop)
/// product    := signed (("*" | "/") signed)*
/// signed     := ("-" | "+")* atom
/// atom       := keypath | `field` | string | number | true | false | nil | $name | "{" operand, … "}"
///             | "(" operand ")" | function "(" operand, … ")" | "now" "(" ")"
///             | "TERNARY" "(" expression "," operand "," operand ")"
///             | "SUBQUERY" "(" keypath "," $name "," expression ")" ".@count"
/// function   := a name ending in ":" (`uppercase:`, `modulus:by:`)
/// keypath    := name ("." name)*, a name may be @count, @sum, @avg, @min or @max
/// ```
///
/// A "(" where a predicate starts may open a group or an operand
/// (`(budget + 5) * 2 > 100`): both readings are tried, and the one that
/// gets further is kept, or its error shown.
///
/// ANY, SOME, ALL, NONE and SUBQUERY are keywords only where they start a
/// quantified comparison or a subquery, so fields of those names still read.
///
/// It recurses only into parentheses, at most ``maxDepth`` deep; chains of
/// `AND`, `OR` and `NOT` of any length are read in loops.
struct PredicateParser {
    /// How deep parentheses may nest.
    static let maxDepth = 256

    private var tokens: [PredicateLexer.Token]
    private var i = 0
    private var depth = 0

    private static let keywords: Set<String> = [
        "AND", "OR", "NOT", "IN", "BETWEEN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE",
        "TRUE", "FALSE", "YES", "NO", "NIL", "NULL", "TRUEPREDICATE", "FALSEPREDICATE"
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

    /// Parses `text` as one value to compute (`budget * 1.1`,
    /// `uppercase:(name)`): a computed update's or fetch's expression.
    ///
    /// - Throws: ``DepotError/Code/invalidPredicate`` with the position and
    ///   what was expected there.
    static func parseExpression(_ text: String) throws -> PredicateExpression.Operand {
        var parser = PredicateParser(tokens: try PredicateLexer.tokenize(text))
        if parser.current.kind == .end {
            throw DepotError(.invalidPredicate, "the expression is empty", position: 1)
        }
        let value = try parser.operand(context: "a value to compute")
        guard parser.current.kind == .end else {
            throw parser.error(
                "expected an operator or the end of the expression, found \(parser.describe(parser.current))")
        }
        return value
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
        case .function(let f): "the function \(f)"
        case .lparen: "\"(\""
        case .rparen: "\")\""
        case .lbrace: "\"{\""
        case .rbrace: "\"}\""
        case .comma: "\",\""
        case .options(let o): "[\(o)]"
        }
    }

    private mutating func expression() throws -> PredicateExpression {
        var terms = [try conjunction()]
        while keyword(current) == "OR" || current.kind == .op("||") {
            i += 1
            terms.append(try conjunction())
        }
        return .join(terms, or: true)
    }

    private mutating func conjunction() throws -> PredicateExpression {
        var terms = [try negation()]
        while keyword(current) == "AND" || current.kind == .op("&&") {
            i += 1
            terms.append(try negation())
        }
        return .join(terms, or: false)
    }

    private mutating func negation() throws -> PredicateExpression {
        var negated = false
        while keyword(current) == "NOT" || current.kind == .op("!") {
            i += 1
            negated.toggle()
        }
        let e = try primary()
        return negated ? .negate(e) : e
    }

    private mutating func primary() throws -> PredicateExpression {
        if current.kind == .lparen {
            // A group of predicates, or a comparison whose left side starts
            // with a parenthesis (`(budget + 5) * 2 > 100`): the reading that
            // gets further wins, and its error is the one shown.
            let start = i
            let grouped: Result<PredicateExpression, DepotError>
            do {
                grouped = .success(try group())
            } catch let e as DepotError {
                grouped = .failure(e)
            }
            if case .success(let e) = grouped, !Self.comparisonOperators.contains(where: { current.kind == $0 }) {
                return e
            }
            let groupEnd = i
            i = start
            do {
                return try comparison()
            } catch let e as DepotError {
                guard case .failure(let groupError) = grouped else {
                    i = groupEnd
                    return try grouped.get()
                }
                throw (groupError.position ?? 0) >= (e.position ?? 0) ? groupError : e
            }
        }
        switch keyword(current) {
        case "TRUEPREDICATE": i += 1; return .constant(true, position: tokens[i - 1].position)
        case "FALSEPREDICATE": i += 1; return .constant(false, position: tokens[i - 1].position)
        default: break
        }
        return try comparison()
    }

    /// The kinds of token after which a parenthesized operand goes on as a
    /// comparison's left side.
    private static let comparisonOperators: [PredicateLexer.Kind] =
        ["==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/"].map { .op($0) }

    /// `( expression )`.
    private mutating func group() throws -> PredicateExpression {
        guard depth < Self.maxDepth else {
            throw error("parentheses nest more than \(Self.maxDepth) levels deep here; simplify the predicate")
        }
        depth += 1
        defer { depth -= 1 }
        i += 1
        let e = try expression()
        guard current.kind == .rparen else {
            throw error("expected \")\" to close the parenthesis, found \(describe(current))")
        }
        i += 1
        return e
    }

    private mutating func comparison() throws -> PredicateExpression {
        let position = current.position
        var quantifier: PredicateExpression.Quantifier? = nil
        if case .identifier(let w) = current.kind, i + 1 < tokens.count {
            switch tokens[i + 1].kind {
            case .identifier where keyword(tokens[i + 1]) == nil, .quotedField:
                switch w.uppercased() {
                case "ANY", "SOME": quantifier = .anyOf
                case "ALL": quantifier = .allOf
                case "NONE": quantifier = .noneOf
                default: break
                }
            default: break
            }
            if quantifier != nil { i += 1 }
        }
        let lhs = try operand(
            context: quantifier.map { "a key path after \($0.rawValue)" } ?? "a field name, a value or \"(\"")
        let (op, options) = try comparisonOperator()
        let rhs = try operand(context: "a value after \(op.rawValue)")
        return .comparison(
            .init(lhs: lhs, op: op, options: options, rhs: rhs, position: position, quantifier: quantifier))
    }

    /// After SUBQUERY: `(collection, $variable, predicate).@count`.
    private mutating func subquery(at position: Int) throws -> PredicateExpression.Operand {
        i += 1  // (
        guard depth < Self.maxDepth else {
            throw error("subqueries nest more than \(Self.maxDepth) levels deep here; simplify the predicate")
        }
        depth += 1
        defer { depth -= 1 }
        let collectionPosition = current.position
        let collection: String
        switch current.kind {
        case .identifier(let name) where keyword(current) == nil, .quotedField(let name): collection = name
        default: throw error("expected the to-many key path SUBQUERY goes over, found \(describe(current))")
        }
        i += 1
        guard current.kind == .comma else {
            throw error("expected \",\" after SUBQUERY's key path, found \(describe(current))")
        }
        i += 1
        guard case .variable(let variable) = current.kind, !variable.contains(".") else {
            throw error("expected SUBQUERY's variable, like $l, found \(describe(current))")
        }
        i += 1
        guard current.kind == .comma else {
            throw error("expected \",\" after SUBQUERY's variable, found \(describe(current))")
        }
        i += 1
        let predicate = try expression()
        guard current.kind == .rparen else {
            throw error("expected \")\" to close SUBQUERY, found \(describe(current))")
        }
        i += 1
        guard case .identifier(let tail) = current.kind, tail.lowercased() == ".@count" else {
            throw error("SUBQUERY(…) is a collection: follow it with .@count, found \(describe(current))")
        }
        i += 1
        return .subquery(
            .init(
                collection: collection, collectionPosition: collectionPosition, variable: variable,
                predicate: predicate, position: position), position: position)
    }

    private mutating func comparisonOperator() throws -> (PredicateExpression.Operator, String) {
        let op: PredicateExpression.Operator
        switch current.kind {
        case .op(let o) where PredicateExpression.Operator(rawValue: o) != nil:
            op = PredicateExpression.Operator(rawValue: o)!
        case .identifier(let w):
            guard let o = PredicateExpression.Operator(rawValue: w.uppercased()) else {
                throw error(
                    "expected an operator (==, !=, <, <=, >, >=, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, "
                        + "IN, BETWEEN), found \(describe(current))")
            }
            op = o
        default:
            throw error(
                "expected an operator (==, !=, <, <=, >, >=, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, "
                    + "IN, BETWEEN), found \(describe(current))")
        }
        i += 1
        if case .options(let o) = current.kind {
            i += 1
            return (op, o.contains("c") && o.contains("d") ? "cd" : o.contains("c") ? "c" : "d")
        }
        return (op, "")
    }

    /// An operand: a sum of products of signed atoms (`budget * 1.1 + 5`).
    private mutating func operand(context: String) throws -> PredicateExpression.Operand {
        try chain(of: ["+", "-"], context: context) { parser, context in
            try parser.chain(of: ["*", "/"], context: context) { parser, context in try parser.signed(context: context)
            }
        }
    }

    /// `next (op next)*` for the operators `ops`, as one chain.
    private mutating func chain(
        of ops: Set<String>, context: String,
        _ next: (inout PredicateParser, String) throws -> PredicateExpression.Operand
    ) throws -> PredicateExpression.Operand {
        let first = try next(&self, context)
        var steps: [PredicateExpression.Step] = []
        while case .op(let o) = current.kind, ops.contains(o) {
            let position = current.position
            i += 1
            steps.append(.init(op: o, operand: try next(&self, "a value after \(o)"), position: position))
        }
        return steps.isEmpty ? first : .arithmetic(.chain(first, steps), position: first.position)
    }

    /// An atom after any number of signs: `- budget`, `-(a + b)`.
    private mutating func signed(context: String) throws -> PredicateExpression.Operand {
        var negated = false
        let position = current.position
        while case .op(let o) = current.kind, o == "-" || o == "+" {
            if o == "-" { negated.toggle() }
            i += 1
        }
        let atom = try atom(context: context)
        return negated ? .arithmetic(.negate(atom), position: position) : atom
    }

    /// Enters a parenthesis or a function's arguments, at most ``maxDepth`` deep.
    private mutating func nest<T>(_ body: (inout PredicateParser) throws -> T) throws -> T {
        guard depth < Self.maxDepth else {
            throw error("parentheses nest more than \(Self.maxDepth) levels deep here; simplify the expression")
        }
        depth += 1
        defer { depth -= 1 }
        return try body(&self)
    }

    /// The arguments of a function, after its name: `(a, b)`.
    private mutating func arguments(of name: String) throws -> [PredicateExpression.Operand] {
        guard current.kind == .lparen else { throw error("expected \"(\" after \(name), found \(describe(current))") }
        i += 1
        return try nest { parser in
            var items: [PredicateExpression.Operand] = []
            if parser.current.kind == .rparen {
                parser.i += 1
                return items
            }
            while true {
                items.append(try parser.operand(context: "an argument of \(name)"))
                if parser.current.kind == .comma {
                    parser.i += 1
                    continue
                }
                guard parser.current.kind == .rparen else {
                    throw parser.error(
                        "expected \",\" or \")\" in \(name)'s arguments, found \(parser.describe(parser.current))")
                }
                parser.i += 1
                return items
            }
        }
    }

    private mutating func atom(context: String) throws -> PredicateExpression.Operand {
        let t = current
        switch t.kind {
        case .lparen:
            // Depth is checked at the parenthesis itself, as a group's is.
            let inner = try nest { parser in
                parser.i += 1
                return try parser.operand(context: "a value after \"(\"")
            }
            guard current.kind == .rparen else {
                throw error("expected \")\" to close the parenthesis, found \(describe(current))")
            }
            i += 1
            return inner
        case .function(let name):
            i += 1
            return .arithmetic(.function(name, try arguments(of: name)), position: t.position)
        case .identifier(let w) where tokens[i + 1].kind == .lparen && keyword(t) == nil:
            switch w.uppercased() {
            case "TERNARY":
                i += 2
                return try nest { parser in
                    let predicate = try parser.expression()
                    var branches: [PredicateExpression.Operand] = []
                    for k in 0..<2 {
                        guard parser.current.kind == .comma else {
                            throw parser.error(
                                "expected \",\" and the value if \(k == 0 ? "true" : "false") in TERNARY, found \(parser.describe(parser.current))"
                            )
                        }
                        parser.i += 1
                        branches.append(try parser.operand(context: "TERNARY's value if \(k == 0 ? "true" : "false")"))
                    }
                    guard parser.current.kind == .rparen else {
                        throw parser.error("expected \")\" to close TERNARY, found \(parser.describe(parser.current))")
                    }
                    parser.i += 1
                    return .arithmetic(.ternary(predicate, branches[0], branches[1]), position: t.position)
                }
            case "SUBQUERY":
                break
            default:
                i += 1
                return .arithmetic(.function(w, try arguments(of: w)), position: t.position)
            }
        default:
            break
        }
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
            case nil:
                i += 1
                if w.uppercased() == "SUBQUERY", current.kind == .lparen { return try subquery(at: t.position) }
                return .field(w, position: t.position)
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
