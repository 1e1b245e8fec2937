/// SQL text with its bound values, in order.
package struct SQLFragment: Sendable {
    package var sql: String
    package var arguments: [Value]
    /// The other entities it reads through key paths, whose changes can change its result.
    var related: Set<String> = []
    /// Whether its text recurs (one record by its identifier), so that its
    /// statements are worth caching; a user's predicate's are not.
    var recurs = false
}

/// Checks a parsed predicate against an entity and compiles it to SQL.
///
/// Values are always bound as parameters, never pasted into the SQL text.
/// Field names are quoted. `[c]`/`[d]` comparisons fold both sides with
/// ``TextFolding``.
///
/// Key paths (DESIGN §12) compile to correlated subqueries on the related
/// tables, each found through its identifier or its to-one's index: a
/// to-one path (`customer.country`) is a scalar subquery, so it behaves as a
/// field would, null when the reference is null or names no record;
/// `ANY`/`ALL`/`NONE` over a to-many path are `EXISTS` and `NOT EXISTS`;
/// `@count`, `@sum`, `@avg`, `@min`, `@max` and `SUBQUERY(…).@count` are
/// aggregate subqueries. A bare key path always starts at the fetched
/// record; inside a `SUBQUERY`, `$l.qty` starts at the element.
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
package struct PredicateCompiler {
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
    /// The most relationships one key path goes through: each is a table of
    /// its subquery's join, and SQLite joins at most 64.
    static let maxHops = 32

    /// The entity a key path starts from: the fetched one, or a
    /// SUBQUERY's element (`alias`, named by `variable`).
    struct Scope {
        var entity: EntitySchema
        var alias: String?
        var variable: String?
    }

    let schema: StoreSchema?
    let dialect: any SQLDialect
    let variables: [String: Value]
    var arguments: [Value] = []
    /// The fetched entity first, then one per SUBQUERY being compiled.
    var scopes: [Scope]
    /// Aliases of related tables handed out so far.
    var aliases = 0
    /// How many subqueries the SQL being written stands inside: the
    /// fetched record's columns are qualified inside any.
    var subqueries = 0
    /// The entities key paths reached, the fetched one excepted.
    var related: Set<String> = []
    /// The time `now()` stands for: when the predicate was compiled.
    var now = DateValue.canonical(Timestamp.now()) ?? Timestamp.now()

    /// Compiles `text` for `entity`; `nil` or blank text matches every record.
    /// Key paths through relationships need the store's `schema`.
    ///
    /// - Throws: ``DepotError`` with code `invalidPredicate`, `unknownField` or
    ///   `typeMismatch` and the position of the problem.
    package static func compile(
        _ text: String?, entity: EntitySchema, schema: StoreSchema? = nil,
        arguments: [String: Value] = [:], dialect: any SQLDialect = .sqlite
    ) throws -> SQLFragment {
        guard let text, !text.trimmingWhitespace().isEmpty else {
            return SQLFragment(sql: dialect.trueLiteral, arguments: [])
        }
        let expression = try PredicateParser.parse(text)
        var compiler = PredicateCompiler(entity: entity, schema: schema, variables: arguments, dialect: dialect)
        let sql = try compiler.compile(expression, negated: false, nesting: 0)
        return SQLFragment(sql: sql, arguments: compiler.arguments, related: compiler.related)
    }

    /// The SQL expression of a field or key path of `entity` that has one
    /// value per record (a to-one path, `lines.@count`, `lines.@sum.price`),
    /// for sorting and grouping, with the field it reads (named `path`).
    ///
    /// - Throws: ``DepotError/Code/unknownField`` or ``DepotError/Code/invalidPredicate``.
    static func expression(
        _ path: String, entity: EntitySchema, schema: StoreSchema?,
        dialect: any SQLDialect = .sqlite
    ) throws -> (sql: String, field: Field, related: Set<String>) {
        var compiler = PredicateCompiler(entity: entity, schema: schema, variables: [:], dialect: dialect)
        do {
            let (sql, field) = try compiler.scalar(.field(path, position: 1), nesting: 0)!
            return (sql, field, compiler.related)
        } catch var error as DepotError {
            error.position = nil
            throw error
        }
    }

    init(entity: EntitySchema, schema: StoreSchema?, variables: [String: Value], dialect: any SQLDialect) {
        self.schema = schema
        self.dialect = dialect
        self.variables = variables
        self.scopes = [Scope(entity: entity)]
    }

    /// The SQL of `e`, or of `NOT e` when `negated`, standing inside
    /// `nesting` parentheses; a group comes back in parentheses of its own.
    mutating func compile(_ e: PredicateExpression, negated: Bool, nesting: Int) throws -> String {
        switch e {
        case .constant(let b, _):
            return b != negated ? dialect.trueLiteral : dialect.falseLiteral
        case .comparison(let c):
            let sql = try comparison(c, nesting: nesting)
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
                throw DepotError(
                    .invalidPredicate,
                    "the predicate nests AND and OR more than \(Self.maxNesting) levels "
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
    static func collect(
        _ terms: [PredicateExpression], negated: Bool, isAnd: Bool,
        into flat: inout [(PredicateExpression, Bool)]
    ) {
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

    func mismatch(_ message: String, at position: Int) -> DepotError {
        DepotError(.typeMismatch, message, position: position)
    }

    /// The value of a literal or a variable.
    func value(_ operand: PredicateExpression.Operand) throws -> Value {
        switch operand {
        case .literal(let v, _): return v
        case .variable(let name, let position):
            guard let v = variables[name] else {
                throw DepotError(
                    .invalidPredicate, "no value was given for $\(name); pass it in the arguments",
                    position: position)
            }
            return v
        case .arithmetic:
            guard let v = try ExpressionEvaluator.constant(operand, variables: variables, now: now) else {
                preconditionFailure("value(_:) takes literals, variables and constant expressions")
            }
            return v
        case .field, .list, .subquery:
            preconditionFailure("value(_:) takes literals, variables and constant expressions")
        }
    }

    func describe(_ operand: PredicateExpression.Operand, _ v: Value) -> String {
        if case .variable(let name, _) = operand { return "$\(name) (\(v.kindName) \(v))" }
        return "\(v.kindName) \(v)"
    }

    /// Converts a value compared with `field` to the stored form, or throws.
    func convert(_ operand: PredicateExpression.Operand, for field: Field, textual: Bool) throws -> Value {
        let v = try value(operand)
        let name = JSONText.quoted(field.name)
        let bad = mismatch(
            "field \(name) is \(field.type.rawValue), but \(describe(operand, v)) is compared with it",
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
                throw mismatch(
                    "\(JSONText.quoted(s)) is not an ISO 8601 date or date-time "
                        + "(like 2025-03-14 or 2025-03-14T09:30:00Z), so it cannot be compared with date field \(name)",
                    at: operand.position)
            }
            return .string(canonical)
        default: throw bad
        }
    }

    /// Appends `v` to the arguments; the operand's `position` names it when
    /// there are too many.
    mutating func bind(_ v: Value, at position: Int) throws -> String {
        guard arguments.count < Self.maxArguments else {
            throw DepotError(
                .invalidPredicate,
                "the predicate holds more than \(Self.maxArguments) values, more than "
                    + "SQLite takes in one query; write a long list of values as field IN {…}, which takes any number",
                position: position)
        }
        arguments.append(v)
        return dialect.placeholder(arguments.count)
    }
}
