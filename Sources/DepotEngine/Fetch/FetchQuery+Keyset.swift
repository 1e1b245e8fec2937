/// Keyset paging and identifier lists (DESIGN §4), compiled into the
/// fetch's predicate: bound values, never predicate text.
extension FetchQuery {
    /// One key of the order, as its `ORDER BY` term reads it.
    struct OrderKey {
        /// The key's SQL with its collation: what the order compares.
        var sql: String
        var field: Field
        var descending: Bool
        var nullsFirst: Bool
    }

    /// The records after the one whose keys hold `values`, in the order of
    /// `keys`: ahead in the first key, or equal in it and ahead in the
    /// next, and so on, with each key's direction and place of nulls.
    ///
    /// `rowidOf`, on SQLite, is the last key, the rowid, which ties are
    /// ordered by: the values after the sort's are the identifier's fields
    /// not among them, and the rowid compared is that record's.
    static func keyset(
        after values: [Value], keys sortKeys: [OrderKey], rowidOf: (OrderKey, [Field], EntitySchema)?,
        names: [String], dialect: any SQLDialect, bind: (Value) -> String
    ) throws -> String {
        guard values.count == names.count else {
            throw DepotError(
                .invalidArgument,
                "after takes the last record's values of the order's keys (\(names.joined(separator: ", "))): "
                    + "\(names.count) values, not \(values.count)")
        }
        var converted: [Value] = []
        for (key, value) in zip(sortKeys, values) {
            if key.field.type == .json {
                throw DepotError(
                    .invalidArgument, "after cannot page by \(JSONText.quoted(key.field.name)), a json field")
            }
            var field = key.field
            // A key path's value may be null (no related record).
            field.isOptional = true
            converted.append(try ValueConversion.convert(value, to: field))
        }
        var keys = sortKeys
        // The rowid of the record of the identifier's values (given after
        // the sort's, or among them), bound where it is used: a record
        // deleted since has none, and the records tied with it are passed.
        var rowid: (identifier: [Field], values: [Value], table: String)?
        if let (key, identifier, entity) = rowidOf {
            var byName: [String: Value] = [:]
            for (name, value) in zip(names, values) { byName[name] = value }
            let ids = try identifier.map { field in
                try ValueConversion.convert(byName[field.name] ?? .null, to: field)
            }
            rowid = (identifier, ids, entity.table)
            keys.append(key)
        }
        var terms: [String] = []
        for k in keys.indices {
            let key = keys[k]
            let isRowid = rowid != nil && k == keys.count - 1
            // Nulls first: the values come after them; nulls last: nothing
            // does (and nothing is bound for this term: the placeholders
            // count in order).
            if !isRowid, converted[k] == .null, !key.nullsFirst { continue }
            var parts: [String] = []
            for j in 0..<k {
                parts.append(
                    converted[j] == .null ? "\(keys[j].sql) IS NULL" : "\(keys[j].sql) = \(bind(converted[j]))")
            }
            let ahead: String
            if isRowid, let rowid {
                ahead =
                    "\(key.sql) > (SELECT rowid FROM \(rowid.table) WHERE "
                    + zip(rowid.identifier, rowid.values).map { "\(SQL.quote($0.name)) = \(bind($1))" }
                    .joined(separator: " AND ") + ")"
            } else if converted[k] == .null {
                ahead = "\(key.sql) IS NOT NULL"
            } else {
                let beyond = "\(key.sql) \(key.descending ? "<" : ">") \(bind(converted[k]))"
                ahead = key.nullsFirst ? beyond : "(\(beyond) OR \(key.sql) IS NULL)"
            }
            parts.append(ahead)
            terms.append("(" + parts.joined(separator: " AND ") + ")")
        }
        return terms.isEmpty ? dialect.falseLiteral : "(" + terms.joined(separator: " OR ") + ")"
    }

    /// The records of `identifiers` (each the identifier fields' values).
    static func identified(
        _ identifiers: [[Value]], entity: EntitySchema, dialect: any SQLDialect, bind: (Value) -> String
    ) throws -> String {
        guard identifiers.count <= FetchDescriptor.maxIdentifiers else {
            throw DepotError(
                .invalidArgument,
                "identifiers lists at most \(FetchDescriptor.maxIdentifiers) records, not \(identifiers.count); "
                    + "fetch them in parts")
        }
        let fields = try entity.identifier.map { try entity.field(named: $0) }
        var rows: [[Value]] = []
        for id in identifiers {
            guard id.count == fields.count else {
                throw DepotError(
                    .invalidArgument,
                    "an identifier of \(entity.name) has \(fields.count) values "
                        + "(\(entity.identifier.joined(separator: ", "))), not \(id.count)")
            }
            rows.append(try zip(id, fields).map { try ValueConversion.convert($0, to: $1) })
        }
        if rows.isEmpty { return dialect.falseLiteral }
        if fields.count == 1 {
            // One bound JSON array: any number of identifiers fits.
            var json = "["
            for (k, row) in rows.enumerated() {
                if k > 0 { json += "," }
                JSONText.append(row[0], to: &json)
            }
            json += "]"
            return dialect.inJSONArray(
                dialect.ordered(SQL.quote(fields[0].name), fields[0]), bind(.string(json)), fields[0], folded: false)
        }
        // Row values against one VALUES list: no chain of ORs, which
        // SQLite's parser would refuse past 1,000 terms.
        guard rows.count * fields.count <= 30_000 else {
            throw DepotError(
                .invalidArgument,
                "identifiers of \(fields.count) fields list at most \(30_000 / fields.count) records at a time")
        }
        let columns = fields.map { SQL.quote($0.name) }.joined(separator: ", ")
        let values = rows.map { row in "(" + row.map(bind).joined(separator: ", ") + ")" }.joined(separator: ", ")
        return "((\(columns)) IN (VALUES \(values)))"
    }
}
