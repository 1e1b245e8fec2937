/// Key paths through relationships (DESIGN §12): their joins, the scalar
/// subqueries of to-one paths, `ANY`/`ALL`/`NONE` over to-many paths, and
/// `SUBQUERY(...).@count` with its variable's scope.
extension PredicateCompiler {
    /// The SUBQUERY scope whose variable starts `name` (`l` of `l.qty`), and the path after it.
    func scope(ofVariable name: String) -> (Scope, String)? {
        let head = name.prefix { $0 != "." }
        guard let scope = scopes.last(where: { $0.variable == String(head) }) else { return nil }
        return (scope, String(name.dropFirst(head.count + 1)))
    }

    // MARK: Key paths

    /// A relationship followed from one entity to another.
    struct Hop {
        var relationship: Relationship
        var from: EntitySchema
        var to: EntitySchema
        var isToMany: Bool { !relationship.isToOne }
    }

    struct KeyPath {
        enum Tail {
            case field(Field)
            case count
            case aggregate(String, Field)  // sum, avg, min, max
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
    func keyPath(_ name: String, from scope: Scope, at position: Int) throws -> KeyPath {
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
                    throw DepotError(
                        .invalidPredicate,
                        "\(part) applies to a to-many relationship, like lines.\(part)"
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
                        throw DepotError(
                            .unknownField,
                            "\(part) needs a field of \(JSONText.quoted(current.name)) after it, "
                                + "like \(parts[..<i].joined(separator: ".")).\(part).\(current.fields.first { $0.type.isNumeric }?.name ?? current.fields[0].name)"
                                + (fieldName.isEmpty
                                    ? ""
                                    : "; it has no field \(JSONText.quoted(fieldName))"
                                        + DepotError.suggestion(for: fieldName, in: current.fields.map(\.name))),
                            position: position)
                    }
                    return KeyPath(name: name, hops: hops, tail: .aggregate(op, current.fields[p]))
                default:
                    throw DepotError(
                        .invalidPredicate,
                        "unknown collection operator \(part): use @count, @sum, @avg, @min "
                            + "or @max", position: position)
                }
            }
            guard let r = current.relationships.first(where: { $0.name == part }),
                let target = try? schema?.entity(r.target)
            else {
                if current.position(of: part) != nil {
                    throw DepotError(
                        .invalidPredicate,
                        "\(JSONText.quoted(part)) is a field of \(JSONText.quoted(current.name)), "
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
                throw DepotError(
                    .unknownField,
                    "entity \(JSONText.quoted(current.name)) has no field or relationship "
                        + "\(JSONText.quoted(hops.isEmpty && parts.count == 1 ? name : part))"
                        + DepotError.suggestion(for: part, in: known), position: position)
            }
            guard hops.count < Self.maxHops else {
                throw DepotError(
                    .invalidPredicate,
                    "the key path goes through more than \(Self.maxHops) relationships, "
                        + "more than SQLite joins in one query; shorten it", position: position)
            }
            hops.append(Hop(relationship: r, from: current, to: target))
            current = target
            i += 1
        }
        return KeyPath(name: name, hops: hops, tail: .relationship)
    }

    /// The SQL that reads column `name` of `scope`'s record.
    func column(_ name: String, of scope: Scope) -> String {
        if let alias = scope.alias { return "\(alias).\(SQL.quote(name))" }
        return subqueries == 0 ? SQL.quote(name) : "\(scope.entity.table).\(SQL.quote(name))"
    }

    /// The related tables of `hops` from `scope`, each under an alias of its
    /// own, with the conditions that link each to the one before: a to-one
    /// by its target's identifier, a to-many by its inverse's columns.
    /// Call it with ``subqueries`` already counting the subquery it is for.
    mutating func join(_ hops: [Hop], from scope: Scope) -> (from: String, links: [String], last: String) {
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

    func checkNesting(_ nesting: Int, at position: Int) throws {
        guard nesting + 2 <= Self.maxNesting else {
            throw DepotError(
                .invalidPredicate,
                "the predicate nests subqueries and AND/OR more than \(Self.maxNesting) "
                    + "levels deep here, more than SQLite can evaluate; simplify it", position: position)
        }
    }

    func toManyError(_ path: KeyPath, _ hop: Hop, at position: Int) -> DepotError {
        let r = hop.relationship.name
        return DepotError(
            .invalidPredicate,
            "\(JSONText.quoted(r)) is a to-many relationship of "
                + "\(JSONText.quoted(hop.from.name)): say ANY \(path.name) (or ALL, NONE), or use an aggregate such as "
                + "\(r).@count", position: position)
    }

    /// The SQL and field of an operand that reads the records (see
    /// ``isScalar(_:)``); `nil` for a value.
    mutating func scalar(_ operand: PredicateExpression.Operand, nesting: Int) throws -> (String, Field)? {
        let path: KeyPath, scope: Scope, position = operand.position
        switch operand {
        case .field(let name, _):
            scope = scopes[0]
            path = try keyPath(name, from: scope, at: position)
        case .variable(let name, _):
            guard let (s, rest) = self.scope(ofVariable: name) else { return nil }
            guard !rest.isEmpty else {
                throw DepotError(
                    .invalidPredicate,
                    "$\(name) is a record of \(JSONText.quoted(s.entity.name)): compare one "
                        + "of its fields, like $\(name).\(s.entity.fields[0].name)", position: position)
            }
            scope = s
            path = try keyPath(rest, from: s, at: position)
        case .subquery(let sq, _):
            return (try subquery(sq, nesting: nesting), Field(name: "SUBQUERY(\(sq.collection)).@count", type: .int))
        case .arithmetic:
            if try ExpressionEvaluator.constant(operand, variables: variables, now: now) != nil { return nil }
            let c = try computed(operand, nesting: nesting)
            return (c.sql, Field(name: "the expression", type: c.type ?? .double, isOptional: true))
        case .literal, .list:
            return nil
        }
        switch path.tail {
        case .field(let f) where path.hops.isEmpty:
            return (dialect.comparable(column(f.name, of: scope), f), f)
        case .field(let f):
            if let many = path.toMany { throw toManyError(path, many, at: position) }
            try checkNesting(nesting, at: position)
            subqueries += 1
            defer { subqueries -= 1 }
            let j = join(path.hops, from: scope)
            return (
                "(SELECT \(dialect.comparable("\(j.last).\(SQL.quote(f.name))", f)) FROM \(j.from) WHERE \(j.links.joined(separator: " AND ")))",
                Field(name: path.name, type: f.type, isOptional: true)
            )
        case .count:
            return try count(path, from: scope, nesting: nesting, at: position)
        case .aggregate(let op, let f):
            return try aggregate(op, of: f, path, from: scope, nesting: nesting, at: position)
        case .relationship:
            let r = path.hops.last!.relationship
            throw DepotError(
                .invalidPredicate,
                "\(JSONText.quoted(path.name)) is a relationship: compare one of its "
                    + "fields, like \(path.name).\(path.hops.last!.to.fields[0].name)"
                    + (r.isToOne ? "" : ", or count it with \(path.name).@count"), position: position)
        }
    }

    /// `ANY`, `ALL` or `NONE` over a to-many key path.
    mutating func quantified(
        _ c: PredicateExpression.Comparison, _ quantifier: PredicateExpression.Quantifier,
        nesting: Int
    ) throws -> String {
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
            throw DepotError(
                .invalidPredicate,
                "\(quantifier.rawValue) needs a key path through a to-many relationship, "
                    + "like \(quantifier.rawValue) lines.qty > 5", position: position)
        }
        guard case .field(let f) = path.tail, path.toMany != nil else {
            throw DepotError(
                .invalidPredicate,
                "\(quantifier.rawValue) needs a key path through a to-many relationship to a "
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
        let condition = try compare(
            dialect.comparable("\(j.last).\(SQL.quote(f.name))", f), element, inner, nesting: nesting + 2)
        let links = j.links.joined(separator: " AND ")
        switch quantifier {
        case .anyOf: return "EXISTS (SELECT 1 FROM \(j.from) WHERE \(links) AND \(condition))"
        case .noneOf: return "NOT EXISTS (SELECT 1 FROM \(j.from) WHERE \(links) AND \(condition))"
        // Every element holds: none where it is false or unknown (null).
        case .allOf:
            return "NOT EXISTS (SELECT 1 FROM \(j.from) WHERE \(links) AND \(condition) IS NOT \(dialect.trueLiteral))"
        }
    }

    /// `SUBQUERY(collection, $v, predicate).@count`.
    mutating func subquery(_ sq: PredicateExpression.Subquery, nesting: Int) throws -> String {
        let path = try keyPath(sq.collection, from: scopes[0], at: sq.collectionPosition)
        guard case .relationship = path.tail, path.toMany != nil else {
            throw DepotError(
                .invalidPredicate,
                "SUBQUERY goes over a to-many relationship, like SUBQUERY(lines, $l, "
                    + "$l.qty > 2); \(JSONText.quoted(sq.collection)) is not one", position: sq.collectionPosition)
        }
        if scopes.contains(where: { $0.variable == sq.variable }) {
            throw DepotError(
                .invalidPredicate,
                "$\(sq.variable) is already the variable of an enclosing SUBQUERY; "
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
}
