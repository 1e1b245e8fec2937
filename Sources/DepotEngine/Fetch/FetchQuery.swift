import GRDB
import GRDBSQLite

/// A fetch descriptor checked and compiled to SQL.
package struct FetchQuery: Sendable {
    package let entity: EntitySchema
    /// The fields of each record, in order.
    package let fields: [Field]
    /// What each row selects: ``fields``, then the columns prefetching needs.
    package let selected: [Field]
    /// The relationships embedded in each record.
    package let prefetch: [PrefetchPlan]
    package let predicate: SQLFragment
    package let orderBy: String
    package let limit: Int?
    package let offset: Int?
    /// The other entities its key paths read: a change to them can change
    /// its result (``ResultFeed``).
    package let related: Set<String>
    /// The SQL of each computed field (DESIGN §17), by its name: those of
    /// ``fields`` that are not the entity's.
    package let expressions: [String: String]
    /// How many of the predicate's arguments are the computed fields' (bound
    /// first: they are written first, in the select list).
    package let computedArguments: Int

    /// Compiles `d`; on PostgreSQL (`dialect`) ties are broken by the
    /// identifier, there being no rowid.
    package init(_ d: FetchDescriptor, schema: StoreSchema, dialect: any SQLDialect = .sqlite) throws {
        let entity = try schema.entity(d.entity)
        self.entity = entity
        if let limit = d.limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
        if let offset = d.offset, offset < 0 { throw DepotError(.invalidArgument, "offset cannot be negative") }
        limit = d.limit
        offset = d.offset
        if let names = d.fields, names.isEmpty, d.computed.isEmpty {
            throw DepotError(.invalidArgument, "fields is empty; omit it to fetch every field")
        }
        // Computed fields alone (`fields` empty): with the identifier.
        let names = d.fields == [] && !d.computed.isEmpty ? entity.identifier : d.fields
        // Plain fields, and the relationships embedded (prefetch, or key paths in fields).
        let (tree, plain) = try PrefetchPlan.parse(
            entity: entity, schema: schema, prefetch: d.prefetch, fields: names)
        var fields = plain ?? entity.fields
        var computed: ComputedColumns?
        if !d.computed.isEmpty {
            for (i, c) in d.computed.enumerated() {
                if c.name.isEmpty { throw DepotError(.invalidArgument, "a computed field needs a name") }
                if entity.position(of: c.name) != nil || entity.relationships.contains(where: { $0.name == c.name })
                    || d.computed[..<i].contains(where: { $0.name == c.name })
                {
                    throw DepotError(
                        .invalidArgument,
                        "computed field \(JSONText.quoted(c.name)) is named as a field or relationship of "
                            + "\(entity.name), or twice; give it another name")
                }
            }
            let columns = try PredicateCompiler.compute(
                d.computed.map { ($0.name, $0.expression) }, where: d.predicate, entity: entity, schema: schema,
                arguments: d.arguments, dialect: dialect, label: "field")
            computed = columns
            fields += columns.columns.map { Field(name: $0.name, type: $0.type ?? .string, isOptional: true) }
        }
        expressions = Dictionary(uniqueKeysWithValues: (computed?.columns ?? []).map { ($0.name, $0.sql) })
        computedArguments = computed?.columnArguments ?? 0
        var sort = d.sort
        if let section = d.sectionBy {
            let field = try entity.field(named: section)
            if !fields.contains(field) { fields.insert(field, at: 0) }
            if sort.first?.field != section { sort.insert(SortDescriptor(section), at: 0) }
        }
        self.fields = fields
        let (plans, extra) = try PrefetchPlan.build(tree, entity: entity, schema: schema, shown: fields)
        self.prefetch = plans
        self.selected = fields + extra
        var filter =
            try computed?.filter
            ?? PredicateCompiler.compile(
                d.predicate, entity: entity, schema: schema, arguments: d.arguments, dialect: dialect)
        // The values the terms below bind come after the predicate's.
        var arguments = filter.arguments
        func bind(_ value: Value) -> String {
            arguments.append(value)
            return dialect.placeholder(arguments.count)
        }
        var narrowing: [String] = []
        if let identifiers = d.identifiers {
            narrowing.append(try Self.identified(identifiers, entity: entity, dialect: dialect, bind: bind))
        }
        var terms: [String] = []
        var related = filter.related
        // A prefetched record's change changes the record it is embedded in.
        func reached(_ plans: [PrefetchPlan]) {
            for p in plans {
                related.insert(p.target.name)
                reached(p.children)
            }
        }
        reached(plans)
        var keys: [OrderKey] = []
        for key in sort {
            // A field, or a key path with one value per record (DESIGN §12).
            let (sql, field, reached) = try PredicateCompiler.expression(
                key.field, entity: entity, schema: schema,
                dialect: dialect)
            related.formUnion(reached)
            keys.append(
                OrderKey(
                    sql: sql + dialect.byteCollation(of: field), field: field, descending: key.descending,
                    nullsFirst: key.effectiveNulls == .first))
        }
        if sort.isEmpty {
            // Storage order (SQLite's rowid), the cheapest to read.
            guard d.after == nil else {
                throw DepotError(
                    .invalidArgument,
                    "after pages in the order of sort: give sort (the identifier's fields for identifier order)")
            }
        }
        // Records equal in the sort's keys come in the backend's order of
        // ties (``SQLDialect/tieBreak(_:)``): SQLite's rowid, which an index
        // of the sort's fields holds in order (a page of a sort by a field
        // of few values reads no more than the page); PostgreSQL's
        // identifier. The order is total, so a page can start after a record.
        let tieBreak = dialect.tieBreak(entity)
        let identifierSorted = entity.identifier.allSatisfy { name in sort.contains { $0.field == name } }
        var lastKey: (OrderKey, identifier: [Field])?
        if !sort.isEmpty, !identifierSorted {
            if tieBreak == ["rowid"] {
                lastKey = (
                    OrderKey(
                        sql: "rowid", field: Field(name: "rowid", type: .int), descending: false, nullsFirst: true),
                    try entity.identifier.map { try entity.field(named: $0) }
                )
            } else {
                for name in entity.identifier where !sort.contains(where: { $0.field == name }) {
                    let field = try entity.field(named: name)
                    keys.append(
                        OrderKey(
                            sql: SQL.quote(name) + dialect.byteCollation(of: field), field: field, descending: false,
                            nullsFirst: true))
                }
            }
        }
        if let after = d.after {
            guard d.sectionBy == nil else {
                throw DepotError(.invalidArgument, "after pages a fetch without section_by")
            }
            narrowing.append(
                try Self.keyset(
                    after: after, keys: keys, rowidOf: lastKey.map { ($0.0, $0.identifier, entity) },
                    names: d.keys(of: entity), dialect: dialect, bind: bind))
        }
        terms = keys.map {
            "\($0.sql) \($0.descending ? "DESC" : "ASC") NULLS \($0.nullsFirst ? "FIRST" : "LAST")"
        }
        if sort.isEmpty || lastKey != nil { terms += tieBreak }
        orderBy = terms.joined(separator: ", ")
        if narrowing.isEmpty {
            predicate = filter
        } else {
            filter.sql = "(\(filter.sql)) AND " + narrowing.joined(separator: " AND ")
            filter.arguments = arguments
            predicate = filter
        }
        // The entity itself when a path comes back to it (an employee's
        // manager's name): then another record's change can change a record's.
        self.related = related
    }

    /// What a row selects for `field`: its column, or a computed field's SQL.
    package func column(_ field: Field) -> String {
        expressions[field.name].map { "(\($0))" } ?? SQL.quote(field.name)
    }

    private var columns: String { selected.map(column).joined(separator: ", ") }

    /// Embeds the prefetched relationships in `set`, whose rows hold the
    /// ``selected`` columns, one query per relationship; then trims the rows
    /// to ``fields``.
    func embed(_ db: Database, into set: inout RecordSet) throws {
        for plan in prefetch { try plan.embed(db, into: &set) }
        set.trim(to: fields.count)
    }

    private var paging: String {
        switch (limit, offset) {
        case (nil, nil): ""
        case (let l, let o): " LIMIT \(l ?? -1) OFFSET \(o ?? 0)"
        }
    }

    private func run(_ db: Database, _ sql: String, _ arguments: [Value], row: (OpaquePointer) throws -> Void) throws {
        let preparedStatement = try db.makeStatement(sql: sql)
        defer { withExtendedLifetime(preparedStatement) {} }
        let statement = preparedStatement.sqliteStatement
        for (i, v) in arguments.enumerated() { SQL.bind(v, to: statement, at: Int32(i + 1)) }
        defer { sqlite3_reset(statement) }
        while try SQL.step(statement, db) { try row(statement) }
    }

    func records(_ db: Database) throws -> RecordSet {
        var rows: [[Value]] = []
        let selected = self.selected
        try run(
            db, "SELECT \(columns) FROM \(entity.table) WHERE \(predicate.sql) ORDER BY \(orderBy)\(paging)",
            predicate.arguments
        ) { s in
            rows.append(selected.indices.map { SQL.column(s, Int32($0), as: selected[$0].type) })
        }
        var set = RecordSet(fields: fields, rows: rows)
        try embed(db, into: &set)
        return set
    }

    /// The predicate's own arguments, for a query that selects no computed field.
    private var filterArguments: [Value] { Array(predicate.arguments.dropFirst(computedArguments)) }

    func identifiers(_ db: Database) throws -> [Identifier] {
        var ids: [Identifier] = []
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        let columns = idFields.map { SQL.quote($0.name) }.joined(separator: ", ")
        try run(
            db, "SELECT \(columns) FROM \(entity.table) WHERE \(predicate.sql) ORDER BY \(orderBy)\(paging)",
            filterArguments
        ) { s in
            ids.append(Identifier(idFields.indices.map { SQL.column(s, Int32($0), as: idFields[$0].type) }))
        }
        return ids
    }
}
