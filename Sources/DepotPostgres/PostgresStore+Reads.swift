public import DepotEngine
import NIOCore
import PostgresNIO

/// Aggregates, duplicates and exports of a PostgreSQL store, compiled from
/// the engine's plans (``AggregatePlan``, ``DuplicateQuery``) to
/// PostgreSQL's SQL, every value bound; what they answer is what an SQLite
/// store answers for the same records (DepotPostgresTests compares them).
extension PostgresStore {
    /// Count, sum, avg, min and max of a field, per group, in the server.
    public nonisolated func aggregate(_ request: AggregateRequest) async throws -> AggregateResult {
        let plan = try AggregatePlan(request, schema: schema, dialect: .postgresql)
        let binds = PostgresSQL.bindings(plan.arguments)
        let rows = try await read { connection in
            do {
                return try await PostgresSQL.textRows(connection, plan.sql, binds, logger: logger).map { row in
                    let groups = plan.groupFields.indices.map {
                        PostgresSQL.value(row[$0], as: plan.groupFields[$0].type)
                    }
                    let values = plan.types.indices.map {
                        PostgresSQL.value(row[plan.groupFields.count + $0], as: plan.types[$0])
                    }
                    return AggregateResult.Row(groups: groups, values: values)
                }
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "22003" {
                // PostgreSQL's overflow of a double's sum or average.
                throw AggregateResult.outOfRange(plan.functions.first { $0 == .sum || $0 == .avg } ?? .sum)
            }
        }
        return try AggregateResult(plan, groupBy: request.groupBy, rows: rows)
    }

    /// The duplicates request compiled for this store; throws as running it would.
    nonisolated func duplicateQuery(
        entity name: String, by fields: [String], where predicate: String?,
        arguments: [String: Value], limit: Int?
    ) throws -> DuplicateQuery {
        let query = try DuplicateQuery(
            entity: entity(name), schema: schema, by: fields, predicate: predicate,
            arguments: arguments, dialect: .postgresql)
        if let limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
        return query
    }

    /// The groups of records that share the values of `fields` (none null),
    /// handed to `body` one at a time in the order of their values, as the
    /// server streams the records sorted by them. Within a group the
    /// records come by identifier (a PostgreSQL table keeps no insertion order).
    public nonisolated func duplicates(
        entity name: String, by fields: [String], where predicate: String? = nil,
        arguments: [String: Value] = [:], limit: Int? = nil,
        _ body: @escaping @Sendable (DuplicateGroup) throws -> Void
    ) async throws {
        let query = try duplicateQuery(entity: name, by: fields, where: predicate, arguments: arguments, limit: limit)
        if limit == 0 { return }
        let entity = query.entity
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        func ordered(_ field: Field) -> String {
            field.type == .json
                ? "\(PostgresSQL.quote(field.name))::text COLLATE \"C\""
                : PostgresSQL.quote(field.name) + PostgresSQL.byteOrder(entity, field.name)
        }
        let sql =
            "SELECT " + (query.fields + idFields).map { PostgresSQL.selectText($0) }.joined(separator: ", ")
            + " FROM \(table(entity.name)) WHERE \(query.filter.sql) ORDER BY "
            + (query.fields + idFields).map(ordered).joined(separator: ", ")
        let binds = PostgresSQL.bindings(query.filter.arguments)
        let width = query.fields.count
        try await read { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            var current = DuplicateGroup(values: [], identifiers: [])
            var emitted = 0
            for try await row in rows {
                var cells: [String?] = []
                for cell in row { cells.append(cell.bytes.map { String(buffer: $0) }) }
                let values = query.fields.indices.map { PostgresSQL.value(cells[$0], as: query.fields[$0].type) }
                let identifier = Identifier(
                    idFields.indices.map { PostgresSQL.value(cells[width + $0], as: idFields[$0].type) })
                if !current.values.isEmpty, values == current.values {
                    current.identifiers.append(identifier)
                    continue
                }
                if current.identifiers.count > 1 {
                    try body(current)
                    emitted += 1
                    if let limit, emitted == limit { return }
                }
                current = DuplicateGroup(values: values, identifiers: [identifier])
            }
            if current.identifiers.count > 1 { try body(current) }
        }
    }

    /// Writes the records a descriptor's predicate selects as CSV (a header
    /// line first) or NDJSON, in one statement (one snapshot) streamed from
    /// the server, about a megabyte at a time, in identifier order; its
    /// fields apply, its sort, limit and offset do not (as an SQLite store's export).
    ///
    /// - Returns: the number of records written.
    @discardableResult
    public nonisolated func export(
        _ descriptor: FetchDescriptor, as format: RecordFormat,
        write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void,
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Int {
        let query = try FetchQuery(descriptor.wholeSelection, schema: schema, dialect: .postgresql)
        guard query.prefetch.isEmpty else {
            throw DepotError(.invalidArgument, "an export that embeds related records is written a batch at a time")
        }
        let fields = query.fields
        let sql =
            "SELECT " + fields.map(query.selectText).joined(separator: ", ")
            + " FROM \(table(query.entity.name)) WHERE \(query.predicate.sql) ORDER BY \(query.orderBy)"
        var header = ""
        if format == .csv {
            var bytes: [UInt8] = []
            RowEncoder(fields: fields).csvHeader(to: &bytes)
            header = String(decoding: bytes, as: UTF8.self)
        }
        return try await streamRecords(
            sql, query.predicate.arguments, fields: fields,
            initial: (text: header, count: 0)
        ) { state, chunk in
            chunk.appendLines(as: format, to: &state.text)
            state.count += chunk.count
            try state.text.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
            state.text.removeAll(keepingCapacity: true)
            progress(state.count)
        }.count
    }

    /// The records of `descriptor` (its sort, limit and offset applied) as
    /// one JSON array, handed to `write` 8,192 records at a time as the
    /// server sends them: memory holds a chunk, whatever the answer's size
    /// (issue #35). A descriptor that embeds related records is written whole.
    public nonisolated func fetchJSON(
        _ descriptor: FetchDescriptor,
        write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void
    ) async throws {
        let query = try FetchQuery(descriptor, schema: schema, dialect: .postgresql)
        guard query.prefetch.isEmpty else {
            var text = try await fetch(descriptor).jsonArray()
            try text.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
            return
        }
        let fields = query.fields
        let sql =
            "SELECT " + fields.map(query.selectText).joined(separator: ", ")
            + " FROM \(table(query.entity.name)) WHERE \(query.predicate.sql) ORDER BY \(query.orderBy)"
            + (query.limit.map { " LIMIT \($0)" } ?? "") + (query.offset.map { " OFFSET \($0)" } ?? "")
        var end = try await streamRecords(
            sql, query.predicate.arguments, fields: fields,
            initial: (text: "[", any: false)
        ) { state, chunk in
            chunk.appendJSONElements(to: &state.text, afterOthers: state.any)
            state.any = state.any || chunk.count > 0
            try state.text.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
            state.text.removeAll(keepingCapacity: true)
        }.text
        end += "]"
        try end.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }

    /// Runs `sql` and hands its rows, read as `fields`, to `body` 8,192 at
    /// a time as the server sends them (the last chunk may be smaller, or
    /// empty), with `state` carried from chunk to chunk; cancellation ends
    /// it between chunks. The state after the last chunk.
    private nonisolated func streamRecords<State: Sendable>(
        _ sql: String, _ arguments: [Value], fields: [Field], initial: State,
        _ body: @escaping @Sendable (inout State, RecordSet) throws -> Void
    ) async throws -> State {
        let binds = PostgresSQL.bindings(arguments)
        return try await read { connection in
            var state = initial
            var chunk: [[Value]] = []
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            for try await row in rows {
                var values: [Value] = []
                values.reserveCapacity(fields.count)
                for (i, cell) in row.enumerated() {
                    values.append(PostgresSQL.value(cell.bytes.map { String(buffer: $0) }, as: fields[i].type))
                }
                chunk.append(values)
                if chunk.count == 8_192 {
                    try body(&state, RecordSet(fields: fields, rows: chunk))
                    chunk.removeAll(keepingCapacity: true)
                    try Task.checkCancellation()
                }
            }
            try body(&state, RecordSet(fields: fields, rows: chunk))
            return state
        }
    }
}

extension PostgresStore {
    /// The references that point at nothing, in one snapshot (a repeatable
    /// read transaction): for each to-one, how many records name a missing
    /// target, and the first of them by identifier, at most `limit` in all.
    public nonisolated func danglingReferences(limit: Int = 1_000) async throws -> ReferenceCheck {
        guard limit >= 0 else { throw DepotError(.invalidArgument, "limit cannot be negative") }
        let schema = schema, entities = schema.entities
        do {
            return try await transaction { connection in
                try await PostgresSQL.execute(
                    connection, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY",
                    logger: logger)
                var check = ReferenceCheck()
                for entity in entities {
                    for probe in try ReferenceCheck.probes(entity, schema: schema) {
                        let from = "FROM \(table(entity.name)) AS e WHERE \(probe.missing)"
                        let count =
                            PostgresSQL.scalar(
                                try await PostgresSQL.textRows(
                                    connection, "SELECT count(*)::text \(from)", logger: logger)
                            ).flatMap { Int($0) } ?? 0
                        check.count(entity: entity.name, relationship: probe.relationship, dangling: count)
                        let room = limit - check.dangling.count
                        guard count > 0, room > 0 else { continue }
                        let (ids, refs) = (probe.identifierFields, probe.referenceFields)
                        let sql =
                            "SELECT "
                            + (ids + refs).map { PostgresSQL.selectText($0, table: "e") }.joined(separator: ", ")
                            + " \(from) ORDER BY "
                            + ids.map {
                                "e." + PostgresSQL.quote($0.name)
                                    + PostgresSQL.byteOrder(entity, $0.name)
                            }.joined(separator: ", ") + " LIMIT \(room)"
                        for row in try await PostgresSQL.textRows(connection, sql, logger: logger) {
                            let id = ids.indices.map { PostgresSQL.value(row[$0], as: ids[$0].type) }
                            let ref = refs.indices.map { PostgresSQL.value(row[ids.count + $0], as: refs[$0].type) }
                            check.dangling.append(
                                DanglingReference(
                                    entity: entity.name, identifier: Identifier(id),
                                    relationship: probe.relationship.name,
                                    target: probe.relationship.target, reference: Identifier(ref)))
                        }
                    }
                }
                return check
            }
        } catch {
            throw translate(error)
        }
    }
}

extension PostgresStore {
    /// A query's records (its ``FetchQuery/selected`` columns read, then
    /// the related records it embeds, then trimmed to its fields), with
    /// `tail` after the ORDER BY (a page) and the predicate's values bound
    /// first, `extra` after them.
    nonisolated func records(
        _ query: FetchQuery, where condition: String? = nil, extra: [Value] = [],
        tail: String = "", on connection: PostgresConnection
    ) async throws -> RecordSet {
        let selected = query.selected
        let sql =
            "SELECT " + selected.map(query.selectText).joined(separator: ", ")
            + " FROM \(table(query.entity.name)) WHERE (\(query.predicate.sql))"
            + (condition.map { " AND \($0)" } ?? "")
            + " ORDER BY \(query.orderBy)" + tail
        let rows = try await PostgresSQL.textRows(
            connection, sql, PostgresSQL.bindings(query.predicate.arguments + extra),
            logger: logger
        ).map { row in
            zip(selected, row).map { PostgresSQL.value($1, as: $0.type) }
        }
        var set = RecordSet(fields: query.fields, rows: rows)
        for plan in query.prefetch { try await embed(plan, into: &set, on: connection) }
        set.trim(to: query.fields.count)
        return set
    }

    /// Embeds `plan`'s related records in `parent` (whose rows hold the
    /// parent level's selected columns), as an SQLite store does: the
    /// parent rows' distinct keys looked up a thousand at a time, to-many
    /// members in the order of the target's identifier, then the nested plans.
    private nonisolated func embed(
        _ plan: PrefetchPlan, into parent: inout RecordSet,
        on connection: PostgresConnection
    ) async throws {
        let target = plan.target
        let matchFields = plan.matches.map { target.fields[target.position(of: $0)!] }
        let columns = matchFields + plan.selected
        let order =
            plan.isToMany
            ? " ORDER BY "
                + target.identifier.map {
                    PostgresSQL.quote($0)
                        + PostgresSQL.byteOrder(target, $0)
                }.joined(separator: ", ") : ""
        var found = RecordSet(fields: plan.selected, rows: [])
        var byKey: [PrefetchPlan.Key: [Int]] = [:]
        let keys = plan.distinctKeys(of: parent)
        var start = 0
        while start < keys.count {
            let chunk = keys[start..<min(start + 1_000, keys.count)]
            start += chunk.count
            var values: [Value] = []
            let tuples = chunk.map { key -> String in
                let placeholders = key.map { v -> String in
                    values.append(v)
                    return "$\(values.count)"
                }
                return placeholders.count == 1 ? placeholders[0] : "(" + placeholders.joined(separator: ", ") + ")"
            }
            let matched = plan.matches.map(PostgresSQL.quote)
            let left = matched.count == 1 ? matched[0] : "(" + matched.joined(separator: ", ") + ")"
            let sql =
                "SELECT " + columns.map { PostgresSQL.selectText($0) }.joined(separator: ", ")
                + " FROM \(table(target.name)) WHERE \(left) IN (" + tuples.joined(separator: ", ") + ")\(order)"
            for row in try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings(values), logger: logger) {
                let typed = zip(columns, row).map { PostgresSQL.value($1, as: $0.type) }
                byKey[PrefetchPlan.Key(Array(typed.prefix(matchFields.count))), default: []].append(found.rows.count)
                found.rows.append(Array(typed.dropFirst(matchFields.count)))
            }
        }
        for child in plan.children { try await embed(child, into: &found, on: connection) }
        plan.attach(found, byKey: byKey, to: &parent)
    }
}
