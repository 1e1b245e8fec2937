/// SQL text with its bound values, in order.
package struct SQLFragment: Sendable {
    package var sql: String
    package var arguments: [Value]
    /// The other entities it reads through key paths, whose changes can change its result.
    var related: Set<String> = []
}

/// The SQL a predicate, a sort or an aggregate is written in: SQLite's, or
/// PostgreSQL's for a store on PostgreSQL (DESIGN §15). The two differ in
/// their placeholders (`?`, `$1`), truth values, null-safe inequality
/// (`IS NOT`, `IS DISTINCT FROM`), a few functions, and text order: a
/// PostgreSQL text comparison names the byte order (`COLLATE "C"`), the
/// order SQLite's text has.
package enum SQLDialect: Sendable {
    case sqlite
    case postgresql

    var `true`: String { self == .sqlite ? "1" : "TRUE" }
    var `false`: String { self == .sqlite ? "0" : "FALSE" }
    /// Null-safe `!=`: true when exactly one side is null.
    var isNot: String { self == .sqlite ? "IS NOT" : "IS DISTINCT FROM" }
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
    /// SQLite's limit on the length of a LIKE or GLOB pattern, in bytes.
    static let maxPattern = 50_000
    /// The most relationships one key path goes through: each is a table of
    /// its subquery's join, and SQLite joins at most 64.
    static let maxHops = 32

    /// The entity a key path starts from: the fetched one, or a
    /// SUBQUERY's element (`alias`, named by `variable`).
    private struct Scope {
        var entity: EntitySchema
        var alias: String?
        var variable: String?
    }

    private let schema: StoreSchema?
    private let dialect: SQLDialect
    private let variables: [String: Value]
    private var arguments: [Value] = []
    /// The fetched entity first, then one per SUBQUERY being compiled.
    private var scopes: [Scope]
    /// Aliases of related tables handed out so far.
    private var aliases = 0
    /// How many subqueries the SQL being written stands inside: the
    /// fetched record's columns are qualified inside any.
    private var subqueries = 0
    /// The entities key paths reached, the fetched one excepted.
    private var related: Set<String> = []

    /// Compiles `text` for `entity`; `nil` or blank text matches every record.
    /// Key paths through relationships need the store's `schema`.
    ///
    /// - Throws: ``DepotError`` with code `invalidPredicate`, `unknownField` or
    ///   `typeMismatch` and the position of the problem.
    package static func compile(_ text: String?, entity: EntitySchema, schema: StoreSchema? = nil,
                        arguments: [String: Value] = [:], dialect: SQLDialect = .sqlite) throws -> SQLFragment {
        guard let text, !text.trimmingWhitespace().isEmpty else {
            return SQLFragment(sql: dialect.true, arguments: [])
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
    static func expression(_ path: String, entity: EntitySchema, schema: StoreSchema?,
                           dialect: SQLDialect = .sqlite) throws -> (sql: String, field: Field, related: Set<String>) {
        var compiler = PredicateCompiler(entity: entity, schema: schema, variables: [:], dialect: dialect)
        do {
            let (sql, field) = try compiler.scalar(.field(path, position: 1), nesting: 0)!
            return (sql, field, compiler.related)
        } catch var error as DepotError {
            error.position = nil
            throw error
        }
    }

    private init(entity: EntitySchema, schema: StoreSchema?, variables: [String: Value], dialect: SQLDialect) {
        self.schema = schema
        self.dialect = dialect
        self.variables = variables
        self.scopes = [Scope(entity: entity)]
    }

    /// The SQL of `e`, or of `NOT e` when `negated`, standing inside
    /// `nesting` parentheses; a group comes back in parentheses of its own.
    private mutating func compile(_ e: PredicateExpression, negated: Bool, nesting: Int) throws -> String {
        switch e {
        case .constant(let b, _):
            return b != negated ? dialect.true : dialect.false
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
        case .field, .list, .subquery:
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
        return dialect == .sqlite ? "?" : "$\(arguments.count)"
    }

    private mutating func comparison(_ c0: PredicateExpression.Comparison, nesting: Int) throws -> String {
        var c = c0
        // `5 < budget` reads as `budget > 5`.
        if c.quantifier == nil, isScalar(c.rhs), !isScalar(c.lhs), let flipped = c.op.flipped {
            swap(&c.lhs, &c.rhs)
            c.op = flipped
        }
        if let quantifier = c.quantifier { return try quantified(c, quantifier, nesting: nesting) }
        // A to-one with a compound identifier compared with nil: all its columns.
        if case .field(let name, let position) = c.lhs, case .literal(.null, _) = c.rhs, c.op == .equal || c.op == .notEqual,
           let path = try? keyPath(name, from: scopes[0], at: position), case .relationship = path.tail,
           path.hops.count == 1, let columns = path.hops[0].from.relationshipColumns[path.hops[0].relationship.name] {
            let refs = columns.map { column($0, of: scopes[0]) }
            return c.op == .equal ? "(" + refs.map { "\($0) IS NULL" }.joined(separator: " AND ") + ")"
                : "(" + refs.map { "\($0) IS NOT NULL" }.joined(separator: " OR ") + ")"
        }
        guard let (column, field) = try scalar(c.lhs, nesting: nesting) else {
            throw DepotError(.invalidPredicate, "the left side of \(c.op.rawValue) must be a field name",
                             position: c.lhs.position)
        }
        return try compare(column, field, c, nesting: nesting)
    }

    /// `base` (the SQL of a field or key path holding `field`'s values)
    /// compared as `c` says.
    private mutating func compare(_ base: String, _ field: Field, _ c: PredicateExpression.Comparison,
                                  nesting: Int) throws -> String {
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
        let column = flags == 0 ? ordered(base, field) : "depot_fold(\(base), \(flags))" + byteOrder
        func folded(_ v: Value) -> Value {
            if flags != 0, case .string(let s) = v { return .string(TextFolding.fold(s, flags: flags)) }
            return v
        }

        // Field against field.
        if isScalar(c.rhs), let (otherBase, other) = try scalar(c.rhs, nesting: nesting) {
            let compatible = field.type == other.type || (field.type.isNumeric && other.type.isNumeric)
            guard compatible else {
                throw mismatch("\(quotedName) is \(field.type.rawValue) and \(JSONText.quoted(other.name)) is "
                    + "\(other.type.rawValue): they cannot be compared", at: c.position)
            }
            let otherColumn = flags == 0 ? ordered(otherBase, other) : "depot_fold(\(otherBase), \(flags))" + byteOrder
            switch c.op {
            case .equal: return "(\(column) = \(otherColumn))"
            case .notEqual: return "(\(column) \(dialect.isNot) \(otherColumn))"
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
                if isScalar(item) {
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
            if values.isEmpty { return dialect.false }
            if values.count > Self.longList {
                // One bound JSON array instead of a parameter per value: any length fits.
                var json = "["
                for (k, v) in values.enumerated() {
                    if k > 0 { json += "," }
                    JSONText.append(v, to: &json)
                }
                json += "]"
                let list = try bind(.string(json), at: listPosition)
                if dialect == .postgresql {
                    let type = flags != 0 || field.type.isTextual ? "text" : Self.postgresType(field.type)
                    return "(\(column) IN (SELECT value::\(type)\(byteOrderOf(field)) FROM json_array_elements_text(\(list)::json)))"
                }
                return "(\(column) IN (SELECT value FROM json_each(\(list))))"
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
            case .equal: return "(\(base) IS NULL)"
            case .notEqual: return "(\(base) IS NOT NULL)"
            default:
                throw mismatch("nil can only be compared with == or !=", at: c.rhs.position)
            }
        }
        let at = c.rhs.position
        switch c.op {
        case .equal: return "(\(column) = \(try bind(v, at: at)))"
        case .notEqual: return "(\(column) \(dialect.isNot) \(try bind(v, at: at)))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual: return "(\(column) \(c.op.rawValue) \(try bind(v, at: at)))"
        case .contains:
            if dialect == .postgresql { return "(strpos(\(column), \(try bind(v, at: at))) > 0)" }
            return "(instr(\(column), \(try bind(v, at: at))) > 0)"
        case .beginsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            return "(substr(\(column), 1, \(s.unicodeScalars.count)) = \(try bind(v, at: at)))"
        case .endsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            if s.isEmpty { return "(\(column) IS NOT NULL)" }
            if dialect == .postgresql { return "(right(\(column), \(s.unicodeScalars.count)) = \(try bind(v, at: at)))" }
            return "(substr(\(column), -\(s.unicodeScalars.count)) = \(try bind(v, at: at)))"
        case .like:
            guard case .string(let s) = v else { preconditionFailure() }
            if dialect == .postgresql {
                return "(\(column) LIKE \(try bind(.string(Self.postgresLike(fromLike: s)), at: at)))"
            }
            let pattern = Self.glob(fromLike: s)
            guard pattern.utf8.count <= Self.maxPattern else {
                throw DepotError(.invalidPredicate, "the LIKE pattern is longer than \(Self.maxPattern) bytes, "
                    + "more than SQLite matches; use CONTAINS, BEGINSWITH or ENDSWITH", position: at)
            }
            return "(\(column) GLOB \(try bind(.string(pattern), at: at)))"
        case .in, .between: preconditionFailure()
        }
    }

    /// Whether `o` reads the records (a field, a key path, a SUBQUERY, a
    /// SUBQUERY variable's path) rather than giving a value.
    private func isScalar(_ o: PredicateExpression.Operand) -> Bool {
        switch o {
        case .field, .subquery: true
        case .variable(let name, _): scope(ofVariable: name) != nil
        case .literal, .list: false
        }
    }

    /// The SUBQUERY scope whose variable starts `name` (`l` of `l.qty`), and the path after it.
    private func scope(ofVariable name: String) -> (Scope, String)? {
        let head = name.prefix { $0 != "." }
        guard let scope = scopes.last(where: { $0.variable == String(head) }) else { return nil }
        return (scope, String(name.dropFirst(head.count + 1)))
    }

    // MARK: Key paths

    /// A relationship followed from one entity to another.
    private struct Hop {
        var relationship: Relationship
        var from: EntitySchema
        var to: EntitySchema
        var isToMany: Bool { !relationship.isToOne }
    }

    private struct KeyPath {
        enum Tail {
            case field(Field)
            case count
            case aggregate(String, Field)   // sum, avg, min, max
            /// The path ends at a relationship.
            case relationship
        }
        var name: String
        var hops: [Hop]
        var tail: Tail
        var toMany: Hop? { hops.first { $0.isToMany } }
    }

    /// Resolves `name` from `scope`'s entity: a field's name (which may hold
    /// dots, as a compound to-one's columns do) wins over a path.
    private func keyPath(_ name: String, from scope: Scope, at position: Int) throws -> KeyPath {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var hops: [Hop] = []
        var current = scope.entity
        var i = 0
        while i < parts.count {
            let rest = parts[i...].joined(separator: ".")
            if !rest.hasPrefix("@"), let p = current.position(of: rest) {
                return KeyPath(name: name, hops: hops, tail: .field(current.fields[p]))
            }
            let part = parts[i]
            if part.hasPrefix("@") {
                guard hops.contains(where: \.isToMany) else {
                    throw DepotError(.invalidPredicate, "\(part) applies to a to-many relationship, like lines.\(part)"
                        + (part == "@count" ? "" : ".price"), position: position)
                }
                let op = part.dropFirst().lowercased()
                switch op {
                case "count":
                    guard i == parts.count - 1 else {
                        throw DepotError(.invalidPredicate, "@count ends a key path: \(name)", position: position)
                    }
                    return KeyPath(name: name, hops: hops, tail: .count)
                case "sum", "avg", "min", "max":
                    let fieldName = parts[(i + 1)...].joined(separator: ".")
                    guard let p = current.position(of: fieldName) else {
                        throw DepotError(.unknownField, "\(part) needs a field of \(JSONText.quoted(current.name)) after it, "
                            + "like \(parts[..<i].joined(separator: ".")).\(part).\(current.fields.first { $0.type.isNumeric }?.name ?? current.fields[0].name)"
                            + (fieldName.isEmpty ? "" : "; it has no field \(JSONText.quoted(fieldName))"
                               + DepotError.suggestion(for: fieldName, in: current.fields.map(\.name))), position: position)
                    }
                    return KeyPath(name: name, hops: hops, tail: .aggregate(op, current.fields[p]))
                default:
                    throw DepotError(.invalidPredicate, "unknown collection operator \(part): use @count, @sum, @avg, @min "
                        + "or @max", position: position)
                }
            }
            guard let r = current.relationships.first(where: { $0.name == part }),
                  let target = try? schema?.entity(r.target) else {
                if current.position(of: part) != nil {
                    throw DepotError(.invalidPredicate, "\(JSONText.quoted(part)) is a field of \(JSONText.quoted(current.name)), "
                        + "not a relationship: a key path cannot go on after it", position: position)
                }
                if hops.isEmpty && parts.count == 1 && current.relationships.isEmpty {
                    // The message of a plain unknown field.
                    do { _ = try current.field(named: name) } catch var error as DepotError {
                        error.position = position
                        throw error
                    }
                }
                let known = current.fields.map(\.name) + current.relationships.map(\.name)
                throw DepotError(.unknownField, "entity \(JSONText.quoted(current.name)) has no field or relationship "
                    + "\(JSONText.quoted(hops.isEmpty && parts.count == 1 ? name : part))"
                    + DepotError.suggestion(for: part, in: known), position: position)
            }
            guard hops.count < Self.maxHops else {
                throw DepotError(.invalidPredicate, "the key path goes through more than \(Self.maxHops) relationships, "
                    + "more than SQLite joins in one query; shorten it", position: position)
            }
            hops.append(Hop(relationship: r, from: current, to: target))
            current = target
            i += 1
        }
        return KeyPath(name: name, hops: hops, tail: .relationship)
    }

    /// The SQL that reads column `name` of `scope`'s record.
    private func column(_ name: String, of scope: Scope) -> String {
        if let alias = scope.alias { return "\(alias).\(SQL.quote(name))" }
        return subqueries == 0 ? SQL.quote(name) : "\(scope.entity.table).\(SQL.quote(name))"
    }

    /// The related tables of `hops` from `scope`, each under an alias of its
    /// own, with the conditions that link each to the one before: a to-one
    /// by its target's identifier, a to-many by its inverse's columns.
    /// Call it with ``subqueries`` already counting the subquery it is for.
    private mutating func join(_ hops: [Hop], from scope: Scope) -> (from: String, links: [String], last: String) {
        var tables: [String] = []
        var links: [String] = []
        var previous: (String) -> String = { [scope, self] in self.column($0, of: scope) }
        var last = ""
        for hop in hops {
            related.insert(hop.to.name)
            aliases += 1
            let alias = "depot_k\(aliases)"
            tables.append("\(hop.to.table) AS \(alias)")
            let pairs: [(String, String)]
            switch hop.relationship.kind {
            case .toOne:
                pairs = Array(zip(hop.to.identifier, hop.from.relationshipColumns[hop.relationship.name] ?? []))
            case .toMany(let inverse, _):
                pairs = Array(zip(hop.to.relationshipColumns[inverse] ?? [], hop.from.identifier))
            }
            for (mine, theirs) in pairs { links.append("\(alias).\(SQL.quote(mine)) = \(previous(theirs))") }
            previous = { "\(alias).\(SQL.quote($0))" }
            last = alias
        }
        return (tables.joined(separator: ", "), links, last)
    }

    private func checkNesting(_ nesting: Int, at position: Int) throws {
        guard nesting + 2 <= Self.maxNesting else {
            throw DepotError(.invalidPredicate, "the predicate nests subqueries and AND/OR more than \(Self.maxNesting) "
                + "levels deep here, more than SQLite can evaluate; simplify it", position: position)
        }
    }

    private func toManyError(_ path: KeyPath, _ hop: Hop, at position: Int) -> DepotError {
        let r = hop.relationship.name
        return DepotError(.invalidPredicate, "\(JSONText.quoted(r)) is a to-many relationship of "
            + "\(JSONText.quoted(hop.from.name)): say ANY \(path.name) (or ALL, NONE), or use an aggregate such as "
            + "\(r).@count", position: position)
    }

    /// The SQL and field of an operand that reads the records (see
    /// ``isScalar(_:)``); `nil` for a value.
    private mutating func scalar(_ operand: PredicateExpression.Operand, nesting: Int) throws -> (String, Field)? {
        let path: KeyPath, scope: Scope, position = operand.position
        switch operand {
        case .field(let name, _):
            scope = scopes[0]
            path = try keyPath(name, from: scope, at: position)
        case .variable(let name, _):
            guard let (s, rest) = self.scope(ofVariable: name) else { return nil }
            guard !rest.isEmpty else {
                throw DepotError(.invalidPredicate, "$\(name) is a record of \(JSONText.quoted(s.entity.name)): compare one "
                    + "of its fields, like $\(name).\(s.entity.fields[0].name)", position: position)
            }
            scope = s
            path = try keyPath(rest, from: s, at: position)
        case .subquery(let sq, _):
            return (try subquery(sq, nesting: nesting), Field(name: "SUBQUERY(\(sq.collection)).@count", type: .int))
        case .literal, .list:
            return nil
        }
        switch path.tail {
        case .field(let f) where path.hops.isEmpty:
            return (read(column(f.name, of: scope), f), f)
        case .field(let f):
            if let many = path.toMany { throw toManyError(path, many, at: position) }
            try checkNesting(nesting, at: position)
            subqueries += 1
            defer { subqueries -= 1 }
            let j = join(path.hops, from: scope)
            return ("(SELECT \(read("\(j.last).\(SQL.quote(f.name))", f)) FROM \(j.from) WHERE \(j.links.joined(separator: " AND ")))",
                    Field(name: path.name, type: f.type, isOptional: true))
        case .count:
            try checkNesting(nesting, at: position)
            subqueries += 1
            defer { subqueries -= 1 }
            let j = join(path.hops, from: scope)
            return ("(SELECT count(*) FROM \(j.from) WHERE \(j.links.joined(separator: " AND ")))",
                    Field(name: path.name, type: .int))
        case .aggregate(let op, let f):
            if (op == "sum" || op == "avg") && !f.type.isNumeric {
                throw DepotError(.typeMismatch, "@\(op) needs a numeric field, but \(JSONText.quoted(f.name)) of "
                    + "\(JSONText.quoted(path.hops.last!.to.name)) is \(f.type.rawValue)", position: position)
            }
            if f.type == .bool || f.type == .json {
                throw DepotError(.typeMismatch, "@\(op) cannot order \(f.type.rawValue) field \(JSONText.quoted(f.name))",
                                 position: position)
            }
            try checkNesting(nesting, at: position)
            subqueries += 1
            defer { subqueries -= 1 }
            let j = join(path.hops, from: scope)
            let value = "\(j.last).\(SQL.quote(f.name))"
            // The sum of no records is 0, as NSPredicate has it; their
            // average, least and greatest are nil.
            let function = switch (op, dialect) {
            case ("sum", .sqlite): f.type == .double ? "total(\(value))" : "coalesce(sum(\(value)), 0)"
            // PostgreSQL sums and averages bigints as numeric: back to the field's type.
            case ("sum", .postgresql): "coalesce(sum(\(value)), 0)::\(Self.postgresType(f.type))"
            case ("avg", .postgresql): "avg(\(value))::double precision"
            case (_, .sqlite): "\(op)(\(value))"
            case (_, .postgresql): "\(op)(\(value)\(byteOrderOf(f)))"
            }
            return ("(SELECT \(function) FROM \(j.from) WHERE \(j.links.joined(separator: " AND ")))",
                    Field(name: path.name, type: op == "avg" ? .double : f.type, isOptional: op != "sum"))
        case .relationship:
            let r = path.hops.last!.relationship
            throw DepotError(.invalidPredicate, "\(JSONText.quoted(path.name)) is a relationship: compare one of its "
                + "fields, like \(path.name).\(path.hops.last!.to.fields[0].name)"
                + (r.isToOne ? "" : ", or count it with \(path.name).@count"), position: position)
        }
    }

    /// `ANY`, `ALL` or `NONE` over a to-many key path.
    private mutating func quantified(_ c: PredicateExpression.Comparison, _ quantifier: PredicateExpression.Quantifier,
                                     nesting: Int) throws -> String {
        let position = c.lhs.position
        let scope: Scope, path: KeyPath
        switch c.lhs {
        case .field(let name, _):
            scope = scopes[0]
            path = try keyPath(name, from: scope, at: position)
        case .variable(let name, _) where self.scope(ofVariable: name) != nil:
            let (s, rest) = self.scope(ofVariable: name)!
            scope = s
            path = try keyPath(rest, from: s, at: position)
        default:
            throw DepotError(.invalidPredicate, "\(quantifier.rawValue) needs a key path through a to-many relationship, "
                + "like \(quantifier.rawValue) lines.qty > 5", position: position)
        }
        guard case .field(let f) = path.tail, path.toMany != nil else {
            throw DepotError(.invalidPredicate, "\(quantifier.rawValue) needs a key path through a to-many relationship to a "
                + "field, like \(quantifier.rawValue) lines.qty > 5; \(JSONText.quoted(path.name)) is not one",
                position: position)
        }
        try checkNesting(nesting, at: position)
        subqueries += 1
        defer { subqueries -= 1 }
        let j = join(path.hops, from: scope)
        let element = Field(name: path.name, type: f.type, isOptional: true)
        var inner = c
        inner.quantifier = nil
        let condition = try compare(read("\(j.last).\(SQL.quote(f.name))", f), element, inner, nesting: nesting + 2)
        let links = j.links.joined(separator: " AND ")
        switch quantifier {
        case .anyOf: return "EXISTS (SELECT 1 FROM \(j.from) WHERE \(links) AND \(condition))"
        case .noneOf: return "NOT EXISTS (SELECT 1 FROM \(j.from) WHERE \(links) AND \(condition))"
        // Every element holds: none where it is false or unknown (null).
        case .allOf:
            return "NOT EXISTS (SELECT 1 FROM \(j.from) WHERE \(links) AND \(condition) IS NOT \(dialect == .sqlite ? "1" : "TRUE"))"
        }
    }

    /// `SUBQUERY(collection, $v, predicate).@count`.
    private mutating func subquery(_ sq: PredicateExpression.Subquery, nesting: Int) throws -> String {
        let path = try keyPath(sq.collection, from: scopes[0], at: sq.collectionPosition)
        guard case .relationship = path.tail, path.toMany != nil else {
            throw DepotError(.invalidPredicate, "SUBQUERY goes over a to-many relationship, like SUBQUERY(lines, $l, "
                + "$l.qty > 2); \(JSONText.quoted(sq.collection)) is not one", position: sq.collectionPosition)
        }
        if scopes.contains(where: { $0.variable == sq.variable }) {
            throw DepotError(.invalidPredicate, "$\(sq.variable) is already the variable of an enclosing SUBQUERY; "
                + "name this one differently", position: sq.position)
        }
        try checkNesting(nesting, at: sq.position)
        subqueries += 1
        defer { subqueries -= 1 }
        let j = join(path.hops, from: scopes[0])
        scopes.append(Scope(entity: path.hops.last!.to, alias: j.last, variable: sq.variable))
        defer { scopes.removeLast() }
        let condition = try compile(sq.predicate, negated: false, nesting: nesting + 2)
        return "(SELECT count(*) FROM \(j.from) WHERE \(j.links.joined(separator: " AND ")) AND \(condition))"
    }

    // MARK: Dialect

    /// A column of `field` as a value compared: PostgreSQL's `json` has no
    /// comparison of its own, so it is compared as its text, as in SQLite.
    private func read(_ column: String, _ field: Field) -> String {
        dialect == .postgresql && field.type == .json ? "(\(column))::text" : column
    }

    /// ` COLLATE "C"` after a text value on PostgreSQL.
    private var byteOrder: String { dialect == .postgresql ? " COLLATE \"C\"" : "" }

    private func byteOrderOf(_ field: Field) -> String { field.type.isTextual ? byteOrder : "" }

    /// `column` compared by bytes when it holds text, as SQLite compares.
    private func ordered(_ column: String, _ field: Field) -> String {
        dialect == .postgresql && field.type.isTextual ? "(\(column) COLLATE \"C\")" : column
    }

    /// The PostgreSQL column type of a field's values (as the PostgreSQL backend creates them).
    static func postgresType(_ type: FieldType) -> String {
        switch type {
        case .string, .date, .json: "text"
        case .int: "bigint"
        case .double: "double precision"
        case .bool: "boolean"
        }
    }

    /// An NSPredicate LIKE pattern (`*` any run, `?` one character, `\*` and
    /// `\?` literal) as a PostgreSQL LIKE pattern (`%`, `_`, escaped with `\`).
    static func postgresLike(fromLike pattern: String) -> String {
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
