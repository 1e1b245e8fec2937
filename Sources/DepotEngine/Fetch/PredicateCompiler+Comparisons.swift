/// Comparisons: a field or key path against a value, a list or another
/// field, with `[c]`/`[d]` folding and three-valued nulls.
extension PredicateCompiler {
    mutating func comparison(_ c0: PredicateExpression.Comparison, nesting: Int) throws -> String {
        var c = c0
        // `5 < budget` reads as `budget > 5`.
        if c.quantifier == nil, isScalar(c.rhs), !isScalar(c.lhs), let flipped = c.op.flipped {
            swap(&c.lhs, &c.rhs)
            c.op = flipped
        }
        if let quantifier = c.quantifier { return try quantified(c, quantifier, nesting: nesting) }
        // A to-one with a compound identifier compared with nil: all its columns.
        if case .field(let name, let position) = c.lhs, case .literal(.null, _) = c.rhs,
            c.op == .equal || c.op == .notEqual,
            let path = try? keyPath(name, from: scopes[0], at: position), case .relationship = path.tail,
            path.hops.count == 1, let columns = path.hops[0].from.relationshipColumns[path.hops[0].relationship.name]
        {
            let refs = columns.map { column($0, of: scopes[0]) }
            return c.op == .equal
                ? "(" + refs.map { "\($0) IS NULL" }.joined(separator: " AND ") + ")"
                : "(" + refs.map { "\($0) IS NOT NULL" }.joined(separator: " OR ") + ")"
        }
        guard let (column, field) = try scalar(c.lhs, nesting: nesting) else {
            throw DepotError(
                .invalidPredicate, "the left side of \(c.op.rawValue) must be a field name",
                position: c.lhs.position)
        }
        return try compare(column, field, c, nesting: nesting)
    }

    /// `base` (the SQL of a field or key path holding `field`'s values)
    /// compared as `c` says.
    mutating func compare(
        _ base: String, _ field: Field, _ c: PredicateExpression.Comparison,
        nesting: Int
    ) throws -> String {
        let quotedName = JSONText.quoted(field.name)
        var flags = 0
        if c.options.contains("c") { flags |= TextFolding.caseInsensitive }
        if c.options.contains("d") { flags |= TextFolding.diacriticInsensitive }
        if flags != 0, !field.type.isTextual {
            throw mismatch(
                "[\(c.options)] applies to text fields, but \(quotedName) is \(field.type.rawValue)",
                at: c.position)
        }
        if c.op.isStringOperator, !field.type.isTextual {
            throw mismatch(
                "\(c.op.rawValue) applies to text fields, but \(quotedName) is \(field.type.rawValue)",
                at: c.position)
        }
        if field.type == .bool, ![.equal, .notEqual, .in].contains(c.op) {
            throw mismatch("bool field \(quotedName) can only be compared with ==, != or IN", at: c.position)
        }
        /// A side as compared: by bytes, or folded (`[c]`, `[d]`).
        func side(_ sql: String, _ field: Field) -> String {
            flags == 0 ? dialect.ordered(sql, field) : "depot_fold(\(sql), \(flags))" + dialect.byteCollation
        }
        let column = side(base, field)
        func folded(_ v: Value) -> Value {
            if flags != 0, case .string(let s) = v { return .string(TextFolding.fold(s, flags: flags)) }
            return v
        }

        // Field against field.
        if isScalar(c.rhs), let (otherBase, other) = try scalar(c.rhs, nesting: nesting) {
            let compatible = field.type == other.type || (field.type.isNumeric && other.type.isNumeric)
            guard compatible else {
                throw mismatch(
                    "\(quotedName) is \(field.type.rawValue) and \(JSONText.quoted(other.name)) is "
                        + "\(other.type.rawValue): they cannot be compared", at: c.position)
            }
            let otherColumn = side(otherBase, other)
            switch c.op {
            case .equal: return "(\(column) = \(otherColumn))"
            case .notEqual: return "(\(column) \(dialect.isDistinctFrom) \(otherColumn))"
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                return "(\(column) \(c.op.rawValue) \(otherColumn))"
            default:
                throw DepotError(
                    .invalidPredicate, "\(c.op.rawValue) needs a value on its right, not a field",
                    position: c.rhs.position)
            }
        }

        switch c.op {
        case .in, .between:
            guard case .list(let items, let listPosition) = c.rhs else {
                throw DepotError(
                    .invalidPredicate, "\(c.op.rawValue) needs a list in braces, like {1, 2}",
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
                    throw DepotError(
                        .invalidPredicate, "BETWEEN needs exactly two values, like {100, 500}",
                        position: listPosition)
                }
                return
                    "(\(column) BETWEEN \(try bind(values[0], at: listPosition)) AND \(try bind(values[1], at: listPosition)))"
            }
            if values.isEmpty { return dialect.falseLiteral }
            if values.count > Self.longList {
                // One bound JSON array instead of a parameter per value: any length fits.
                var json = "["
                for (k, v) in values.enumerated() {
                    if k > 0 { json += "," }
                    JSONText.append(v, to: &json)
                }
                json += "]"
                let list = try bind(.string(json), at: listPosition)
                return dialect.inJSONArray(column, list, field, folded: flags != 0)
            }
            return "(\(column) IN (" + (try values.map { try bind($0, at: listPosition) }).joined(separator: ", ")
                + "))"
        default:
            break
        }
        if case .list = c.rhs {
            throw DepotError(
                .invalidPredicate, "\(c.op.rawValue) compares with one value, not a list",
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
        case .notEqual: return "(\(column) \(dialect.isDistinctFrom) \(try bind(v, at: at)))"
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            return "(\(column) \(c.op.rawValue) \(try bind(v, at: at)))"
        case .contains:
            return dialect.contains(column, try bind(v, at: at))
        case .beginsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            return "(substr(\(column), 1, \(s.unicodeScalars.count)) = \(try bind(v, at: at)))"
        case .endsWith:
            guard case .string(let s) = v else { preconditionFailure() }
            if s.isEmpty { return "(\(column) IS NOT NULL)" }
            return "(\(dialect.suffix(column, count: s.unicodeScalars.count)) = \(try bind(v, at: at)))"
        case .like:
            guard case .string(let s) = v else { preconditionFailure() }
            let (op, pattern) = try dialect.like(s, at: at)
            return "(\(column) \(op) \(try bind(.string(pattern), at: at)))"
        case .in, .between: preconditionFailure()
        }
    }

    /// Whether `o` reads the records (a field, a key path, a SUBQUERY, a
    /// SUBQUERY variable's path) rather than giving a value.
    func isScalar(_ o: PredicateExpression.Operand) -> Bool {
        switch o {
        case .field, .subquery: true
        case .variable(let name, _): scope(ofVariable: name) != nil
        case .literal, .list: false
        case .arithmetic: (try? ExpressionEvaluator.constant(o, variables: variables, now: now)) == nil
        }
    }
}
