/// The aggregates of a to-many key path, each a subquery with one value per
/// record: `lines.@count`, and `@sum`, `@avg`, `@min`, `@max` of a field
/// (in predicates, sorts and groups alike).
extension PredicateCompiler {
    /// `path.@count`: how many records the path reaches.
    mutating func count(_ path: KeyPath, from scope: Scope, nesting: Int, at position: Int) throws -> (String, Field) {
        try checkNesting(nesting, at: position)
        subqueries += 1
        defer { subqueries -= 1 }
        let j = join(path.hops, from: scope)
        return (
            "(SELECT count(*) FROM \(j.from) WHERE \(j.links.joined(separator: " AND ")))",
            Field(name: path.name, type: .int)
        )
    }

    /// `path.@op.field`. The sum of no records is 0, as NSPredicate has
    /// it; their average, least and greatest are nil.
    mutating func aggregate(
        _ op: String, of f: Field, _ path: KeyPath, from scope: Scope, nesting: Int,
        at position: Int
    ) throws -> (String, Field) {
        if (op == "sum" || op == "avg") && !f.type.isNumeric {
            throw DepotError(
                .typeMismatch,
                "@\(op) needs a numeric field, but \(JSONText.quoted(f.name)) of "
                    + "\(JSONText.quoted(path.hops.last!.to.name)) is \(f.type.rawValue)", position: position)
        }
        if f.type == .bool || f.type == .json {
            throw DepotError(
                .typeMismatch, "@\(op) cannot order \(f.type.rawValue) field \(JSONText.quoted(f.name))",
                position: position)
        }
        try checkNesting(nesting, at: position)
        subqueries += 1
        defer { subqueries -= 1 }
        let j = join(path.hops, from: scope)
        let function = dialect.keyPathAggregate(op, "\(j.last).\(SQL.quote(f.name))", f)
        return (
            "(SELECT \(function) FROM \(j.from) WHERE \(j.links.joined(separator: " AND ")))",
            Field(name: path.name, type: op == "avg" ? .double : f.type, isOptional: op != "sum")
        )
    }
}
