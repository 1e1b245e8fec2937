import Synchronization

/// The reads of a store written once, as SQL in the backend's dialect over
/// its read primitives (``StoreReading/rows(_:)``,
/// ``StoreReading/snapshot(_:)``, ``StoreReading/stream(_:fields:as:long:_:)``):
/// fetches, counts, identifiers, exports, walks, aggregates, duplicates,
/// the references check and a record's history. What differs between the
/// backends is in the dialect: how a column is read back (PostgreSQL's as
/// text), the order ties take (SQLite's rowid, PostgreSQL's identifier),
/// text compared by its bytes.
extension StoreReading {
    // MARK: - Fetch

    /// The records a descriptor selects, in its order, with the related
    /// records it embeds read in the same snapshot.
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field, a predicate
    ///   that does not parse or compares a field with a value of another
    ///   type, a negative limit or offset.
    package func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet {
        let query = try FetchQuery(descriptor, schema: schema, dialect: dialect)
        let dialect = dialect
        guard query.prefetch.isEmpty else {
            // The records and those they embed in one snapshot.
            return try await snapshot { session in try await query.records(session, dialect) }
        }
        return try await query.records(OneRead(self), dialect)
    }

    /// ``fetch(_:)``'s records as one JSON array (the UTF-8 of
    /// ``RecordSet/jsonArray()``), written straight from the rows read.
    package func fetchJSONBytes(_ descriptor: FetchDescriptor) async throws -> [UInt8] {
        let query = try FetchQuery(descriptor, schema: schema, dialect: dialect)
        guard query.prefetch.isEmpty else { return Array(try await fetch(descriptor).jsonArray().utf8) }
        let out = Gathered<UInt8>()
        out.append([UInt8(ascii: "[")])
        try await stream(
            query.statement(dialect, selecting: query.fields), fields: query.fields, as: .json, long: false
        ) { chunk in
            out.append(chunk.bytes)
            return true
        }
        out.append([UInt8(ascii: "]")])
        return out.value
    }

    /// ``fetchJSONBytes(_:)``'s text.
    package func fetchJSON(_ descriptor: FetchDescriptor) async throws -> String {
        String(decoding: try await fetchJSONBytes(descriptor), as: UTF8.self)
    }

    /// ``fetchJSONBytes(_:)`` handed to `write` about a megabyte at a time,
    /// read on a connection of its own (an answer of any size holds a chunk
    /// in memory and no reader of the pool: issue #35, 20 fetches of 100k
    /// records without a limit took 559 MB). A descriptor that embeds
    /// related records is written whole.
    package func fetchJSON(
        _ descriptor: FetchDescriptor, write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void
    ) async throws {
        let query = try FetchQuery(descriptor, schema: schema, dialect: dialect)
        guard query.prefetch.isEmpty else {
            let bytes = Array(try await fetch(descriptor).jsonArray().utf8)
            try bytes.withUnsafeBytes { try write($0) }
            return
        }
        try Self.write("[", to: write)
        try await stream(query.statement(dialect, selecting: query.fields), fields: query.fields, as: .json, long: true)
        { chunk in
            try chunk.bytes.withUnsafeBytes { try write($0) }
            return true
        }
        try Self.write("]", to: write)
    }

    /// The number of records a descriptor selects, without reading them;
    /// its limit and offset apply.
    package func count(_ descriptor: FetchDescriptor) async throws -> Int {
        let query = try FetchQuery(descriptor, schema: schema, dialect: dialect)
        let filter = query.filter(dialect)
        let statement: SQLStatement =
            query.limit == nil && query.offset == nil
            ? "SELECT count(*) FROM \(table: query.entity) WHERE \(fragment: filter)"
            : "SELECT count(*) FROM (SELECT 1 FROM \(table: query.entity) WHERE \(fragment: filter)\(sql: query.pagingClause(dialect))) AS page"
        return Int(try await rows(statement.once).first?.first?.integer ?? 0)
    }

    /// The identifiers of the records a descriptor selects, in its order.
    package func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier] {
        let query = try FetchQuery(descriptor, schema: schema, dialect: dialect)
        let idFields = query.entity.identifierIndexes.map { query.entity.fields[$0] }
        let columns = idFields.map { dialect.resultColumn(SQL.quote($0.name)) }.joined(separator: ", ")
        let statement: SQLStatement =
            "SELECT \(sql: columns) FROM \(table: query.entity) WHERE \(fragment: query.filter(dialect)) ORDER BY \(sql: query.orderBy)\(sql: query.pagingClause(dialect))"
        return typed(try await rows(statement.once), as: idFields).map(Identifier.init)
    }

    // MARK: - Walks and exports

    /// Every record a descriptor's predicate selects, in batches, in the
    /// store's order (SQLite's storage order, PostgreSQL's identifier);
    /// its sort, limit and offset are not used.
    ///
    /// Each batch is one short read that resumes after the last record's
    /// key, not at an offset, so a walk over millions of records keeps
    /// memory flat and never holds a read snapshot for long. Records
    /// committed meanwhile behind the walk's position are included.
    ///
    /// ```swift
    /// for try await batch in store.reads.enumerate(FetchDescriptor(entity: "Trip"), batchSize: 5_000) {
    ///     total += batch.count
    /// }
    /// ```
    package func enumerate(_ descriptor: FetchDescriptor, batchSize: Int = 5_000) -> RecordBatches {
        let reads = self
        let unsorted = descriptor.wholeSelection
        return RecordBatches(batchSize: max(1, batchSize)) { after, size in
            let dialect = reads.dialect
            let query = try FetchQuery(unsorted, schema: reads.schema, dialect: dialect)
            let key = dialect.recordKey(query.entity)
            let keyColumns = key.match.map(dialect.resultColumn).joined(separator: ", ")
            var statement: SQLStatement =
                "SELECT \(sql: keyColumns), \(sql: query.selectList(dialect, query.selected)) FROM \(table: query.entity) WHERE (\(fragment: query.predicate))"
            if let after {
                statement = statement + " AND " + Self.keyset(key, dialect.tieBreak(query.entity), after: after)
            }
            statement = statement + " ORDER BY \(sql: key.order) LIMIT \(bind: size)"
            let keyFields =
                key.match == ["rowid"]
                ? [Field(name: "rowid", type: .int)]
                : query.entity.identifierIndexes.map { query.entity.fields[$0] }
            let page = statement.once
            // A page and the records it embeds in one snapshot.
            let read: @Sendable (any SQLSession) async throws -> (RecordSet, [[Value]]) = { session in
                let found = typed(try await session.rows(page), as: keyFields + query.selected)
                var set = RecordSet(fields: query.fields, rows: found.map { Array($0.dropFirst(keyFields.count)) })
                for plan in query.prefetch { try await plan.embed(into: &set, session, dialect: dialect) }
                set.trim(to: query.fields.count)
                return (set, found)
            }
            let (set, found) =
                query.prefetch.isEmpty ? try await read(OneRead(reads)) : try await reads.snapshot(read)
            return (set, found.last.map { Array($0.prefix(keyFields.count)) })
        }
    }

    /// Writes the records a descriptor's predicate selects, in the store's
    /// order, as CSV (a header line first) or NDJSON, in one read snapshot
    /// on a connection of its own, handing `write` about a megabyte at a
    /// time, and `progress` the number of records written after each.
    /// Memory stays flat whatever the store's size. The descriptor's fields
    /// apply; its sort, limit and offset do not. A descriptor that embeds
    /// related records is refused (those go through ``enumerate(_:batchSize:)``).
    ///
    /// ```swift
    /// let n = try await store.reads.export(FetchDescriptor(entity: "Trip"), as: .csv) { bytes in
    ///     try file.write(contentsOf: bytes)
    /// }
    /// ```
    ///
    /// - Returns: the number of records written.
    /// - Throws: as ``fetch(_:)``, what `write` throws, `CancellationError`
    ///   when the task is cancelled.
    @discardableResult
    package func export(
        _ descriptor: FetchDescriptor, as format: RecordFormat,
        write: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void,
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Int {
        let query = try FetchQuery(descriptor.wholeSelection, schema: schema, dialect: dialect)
        guard query.prefetch.isEmpty else {
            throw DepotError(.invalidArgument, "an export that embeds related records is written a batch at a time")
        }
        if format == .csv {
            var header: [UInt8] = []
            RowEncoder(fields: query.fields).csvHeader(to: &header)
            try header.withUnsafeBytes { try write($0) }
        }
        let written = Counter()
        let statement: SQLStatement =
            "SELECT \(sql: query.selectList(dialect, query.fields)) FROM \(table: query.entity) WHERE \(fragment: query.predicate) ORDER BY \(sql: dialect.tieBreak(query.entity).joined(separator: ", "))"
        try await stream(statement, fields: query.fields, as: .lines(format), long: true) { chunk in
            try chunk.bytes.withUnsafeBytes { try write($0) }
            progress(written.add(chunk.count))
            return true
        }
        return written.value
    }

    // MARK: - Aggregates, duplicates, references

    /// Count, sum, avg, min and max of a field, per group, in the database.
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field, `sum`/`avg`
    ///   of a field that is not a number, or a bad predicate;
    ///   ``DepotError/Code/outOfRange`` for a sum past what its type holds.
    package func aggregate(_ request: AggregateRequest) async throws -> AggregateResult {
        let plan = try AggregatePlan(request, schema: schema, dialect: dialect)
        let found: [[Value]]
        do {
            let statement: SQLStatement = "\(sql: plan.sql)\(arguments: plan.arguments)"
            found = try await rows(statement.once)
        } catch let error as DepotError where error.code == .outOfRange && !error.message.hasPrefix("a sum overflows") {
            // PostgreSQL's 22003 in the aggregate's words (SQLite's sum of
            // integers says so already: Store.translate).
            throw AggregateResult.outOfRange(plan.functions.first { $0 == .sum || $0 == .avg } ?? .sum)
        }
        let width = plan.groupFields.count
        let rows = found.map { row in
            AggregateResult.Row(
                groups: plan.groupFields.indices.map { row[$0].stored(as: plan.groupFields[$0].type) },
                values: plan.types.indices.map { row[width + $0].stored(as: plan.types[$0]) })
        }
        return try AggregateResult(plan, groupBy: request.groupBy, rows: rows)
    }

    /// The groups of records that share the values of `fields` (none
    /// null, as in a SQL `UNIQUE` constraint), handed to `body` one at a
    /// time in the order of their values, as the records are read sorted
    /// by them on a connection of their own; within a group the records
    /// come in the store's order. One sort, where finding the groups' keys
    /// first (`GROUP BY … HAVING count(*) > 1`) and then their members
    /// sorted twice (BENCHMARKS.md, "Reads at scale").
    ///
    /// - Parameter limit: at most this many groups.
    /// - Throws: ``DepotError`` for an unknown entity or field or a bad predicate.
    package func duplicates(
        entity name: String, by fields: [String], where predicate: String? = nil,
        arguments: [String: Value] = [:], limit: Int? = nil,
        _ body: @escaping @Sendable (DuplicateGroup) throws -> Void
    ) async throws {
        let query = try DuplicateQuery(
            entity: entity(name), schema: schema, by: fields, predicate: predicate, arguments: arguments,
            dialect: dialect)
        if let limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
        if limit == 0 { return }
        let entity = query.entity
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        let columns = query.fields + idFields
        let order =
            query.fields.map { dialect.ordered(dialect.comparable(SQL.quote($0.name), $0), $0) }
            + dialect.tieBreak(entity)
        let statement: SQLStatement =
            "SELECT \(sql: columns.map { dialect.resultColumn(SQL.quote($0.name)) }.joined(separator: ", ")) FROM \(table: entity) WHERE \(fragment: query.filter) ORDER BY \(sql: order.joined(separator: ", "))"
        let width = query.fields.count
        let groups = GroupRun(limit: limit)
        try await stream(statement, fields: columns, as: .values, long: true) { chunk in
            for row in chunk.values {
                let identifier = Identifier(Array(row[width...]))
                if let group = groups.add(Array(row[..<width]), identifier) {
                    try body(group)
                    if groups.full { return false }
                }
            }
            return true
        }
        if let group = groups.last() { try body(group) }
    }

    /// The groups of ``duplicates(entity:by:where:arguments:limit:_:)``, all of them.
    package func duplicates(
        entity name: String, by fields: [String], where predicate: String? = nil,
        arguments: [String: Value] = [:], limit: Int? = nil
    ) async throws -> [DuplicateGroup] {
        let found = Gathered<DuplicateGroup>()
        try await duplicates(entity: name, by: fields, where: predicate, arguments: arguments, limit: limit) {
            found.append([$0])
        }
        return found.value
    }

    /// The references that point at nothing, in one snapshot: for each
    /// to-one of the store, how many records name a target identifier that
    /// no record has, and the first of them in the store's order (at most
    /// `limit` in all).
    ///
    /// ```swift
    /// let check = try await store.reads.danglingReferences()
    /// for d in check.dangling { print("\(d.entity) \(d.identifier) -> no \(d.target) \(d.reference)") }
    /// ```
    package func danglingReferences(limit: Int = 1_000) async throws -> ReferenceCheck {
        guard limit >= 0 else { throw DepotError(.invalidArgument, "limit cannot be negative") }
        let (schema, dialect) = (schema, dialect)
        return try await snapshot { session in
            var check = ReferenceCheck()
            for entity in schema.entities {
                for probe in try ReferenceCheck.probes(entity, schema: schema) {
                    let from: SQLStatement = "FROM \(table: entity) AS e WHERE \(sql: probe.missing)"
                    let count = Int(try await session.rows("SELECT count(*) " + from).first?.first?.integer ?? 0)
                    check.count(entity: entity.name, relationship: probe.relationship, dangling: count)
                    let room = limit - check.dangling.count
                    guard count > 0, room > 0 else { continue }
                    let (ids, refs) = (probe.identifierFields, probe.referenceFields)
                    let columns = (ids + refs).map { dialect.resultColumn("e." + SQL.quote($0.name)) }
                    let order = dialect.tieBreak(entity).map { $0 == "rowid" ? "e.rowid" : $0 }
                    let found = typed(
                        try await session.rows(
                            "SELECT \(sql: columns.joined(separator: ", ")) " + from
                                + " ORDER BY \(sql: order.joined(separator: ", ")) LIMIT \(bind: room)"),
                        as: ids + refs)
                    for row in found {
                        check.dangling.append(
                            DanglingReference(
                                entity: entity.name, identifier: Identifier(Array(row[..<ids.count])),
                                relationship: probe.relationship.name, target: probe.relationship.target,
                                reference: Identifier(Array(row[ids.count...]))))
                    }
                }
            }
            return check
        }
    }

    // MARK: - History

    /// The transactions after `token`, then each as it commits; one larger
    /// than `maxChanges` comes in parts (``HistoryTransaction/continues``).
    ///
    /// ```swift
    /// for try await transaction in store.reads.followHistory(after: lastSeen, entity: nil, author: nil) {
    ///     print(transaction.token, transaction.changes.count)
    /// }
    /// ```
    package func followHistory(
        after token: HistoryToken? = nil, entity: String? = nil, author: String? = nil,
        maxChanges: Int = HistoryFollower.pageChanges
    ) -> HistoryFollower {
        let reads = self
        return HistoryFollower(after: token, signal: signal) { after, caughtUp in
            try await reads.history(
                after: after, entity: entity, author: author, limit: 100,
                maxChanges: min(maxChanges, HistoryFollower.pageChanges), live: caughtUp)
        }
    }

    /// At most `limit` transactions and `maxChanges` changes after `token`
    /// (a transaction larger than that is read in parts: ``HistoryPage``).
    package func history(
        after token: HistoryToken? = nil, entity: String? = nil, author: String? = nil, limit: Int = 100,
        maxChanges: Int = .max
    ) async throws -> [HistoryTransaction] {
        try await history(
            after: token, entity: entity, author: author, limit: limit, maxChanges: maxChanges, live: false)
    }

    /// The newest `limit` changes of the record of `identifier` that the
    /// history keeps, oldest first, each in its transaction (which holds
    /// only that record's changes): a record's history, old → new. A row
    /// of a run of new records (PostgreSQL's) counts when the run names
    /// the record.
    ///
    /// The history has no index by record (every import would pay for one):
    /// this reads the changes of the entity through, newest first, until it
    /// has `limit` of them.
    ///
    /// - Throws: ``DepotError/Code/unknownEntity``.
    package func recordHistory(_ entity: String, identifier: [Value], limit: Int) async throws
        -> [HistoryTransaction]
    {
        let entity = try schema.entity(entity)
        var text = ""
        Identifier.appendJSON(identifier, to: &text)
        let key = text
        let statement: SQLStatement =
            "SELECT c.txn, c.entity, c.identifier, c.kind, c.fields, c.tombstone, c.old, c.new, c.layout, \(changeSpan: ()), t.timestamp, t.author, t.job FROM \(table: "depot_changes") c JOIN \(table: "depot_transactions") t ON t.id = c.txn WHERE c.entity = \(bind: entity.name) AND (c.identifier = \(bind: key) OR \(runNames: key)) ORDER BY c.txn DESC, c.id DESC LIMIT \(bind: max(1, min(limit, 100_000)))"
        let storeName = schema.name
        return try await snapshot { session in
            var layouts = HistoryLayouts()
            var transactions: [HistoryTransaction] = []
            for row in try await session.rows(statement).reversed() {
                guard let txn = row[0].integer else { continue }
                let mine = try await layouts.changes(ofRow: row, session, store: storeName).filter {
                    $0.identifier == key
                }
                if transactions.last?.token.id == txn {
                    transactions[transactions.count - 1].changes += mine
                } else {
                    transactions.append(
                        HistoryTransaction(
                            token: HistoryToken(txn), timestamp: row[10].text ?? "", author: row[11].text ?? "",
                            job: row[12].text, changes: mine))
                }
            }
            return transactions
        }
    }

    // MARK: - Helpers

    /// The records after `after` (the values of `key`'s columns) in the
    /// order of `order` (the same columns, each as it sorts).
    static func keyset(_ key: RecordKeyColumns, _ order: [String], after: [Value]) -> SQLStatement {
        // (a > x) OR (a = x AND b > y) …: written out, so that each column compares in its own order.
        var out: SQLStatement = "("
        for k in key.match.indices {
            if k > 0 { out = out + " OR " }
            out = out + "("
            for j in 0..<k { out = out + "\(sql: key.match[j]) = \(bind: after[j]) AND " }
            out = out + "\(sql: order[k]) > \(bind: after[k]))"
        }
        return out + ")"
    }

    private static func write(_ text: StaticString, to write: (UnsafeRawBufferPointer) throws -> Void) throws {
        try write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}

extension FetchQuery {
    /// The predicate with only the arguments a statement that selects no
    /// computed field binds: SQLite's `?` are bound in order, so the
    /// computed fields' (bound first) go; PostgreSQL's `$n` keep their numbers.
    package func filter(_ dialect: any SQLDialect) -> SQLFragment {
        guard computedArguments > 0, dialect.placeholder(1) == dialect.placeholder(2) else { return predicate }
        var filter = predicate
        filter.arguments.removeFirst(computedArguments)
        return filter
    }

    /// The select list of `fields`, each read back as the dialect reads a column.
    package func selectList(_ dialect: any SQLDialect, _ fields: [Field]) -> String {
        fields.map { dialect.resultColumn(column($0)) }.joined(separator: ", ")
    }

    /// ` LIMIT … OFFSET …`, or nothing.
    package func pagingClause(_ dialect: any SQLDialect) -> String {
        switch (limit, offset) {
        case (nil, nil): ""
        case (let l?, let o): " LIMIT \(l)" + (o.map { " OFFSET \($0)" } ?? "")
        case (nil, let o?): " LIMIT \(dialect.unlimited) OFFSET \(o)"
        }
    }

    /// The query's records read in `session`, in its order, paged, with
    /// the related records they embed; with `identifier`, only the record
    /// of that identifier, if the predicate selects it (a live fetch's
    /// touched record looked up again).
    package func records(_ session: any SQLSession, _ dialect: any SQLDialect, identifier: [Value]? = nil)
        async throws -> RecordSet
    {
        var statement: SQLStatement =
            "SELECT \(sql: selectList(dialect, selected)) FROM \(table: entity) WHERE (\(fragment: predicate))"
        if let identifier { statement = statement + " AND " + .matching(entity.identifier, identifier) }
        statement = statement + " ORDER BY \(sql: orderBy)\(sql: pagingClause(dialect))"
        var set = RecordSet(fields: fields, rows: typed(try await session.rows(statement.once), as: selected))
        for plan in prefetch { try await plan.embed(into: &set, session, dialect: dialect) }
        set.trim(to: fields.count)
        return set
    }

    /// The query's statement selecting `fields`, in its order, paged.
    func statement(_ dialect: any SQLDialect, selecting fields: [Field]) -> SQLStatement {
        let statement: SQLStatement =
            "SELECT \(sql: selectList(dialect, fields)) FROM \(table: entity) WHERE \(fragment: predicate) ORDER BY \(sql: orderBy)\(sql: pagingClause(dialect))"
        return statement.once
    }
}

/// Elements gathered by a stream's `@Sendable` callbacks.
private final class Gathered<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])

    func append(_ more: [Element]) { elements.withLock { $0 += more } }
    var value: [Element] { elements.withLock { $0 } }
}

/// Rows counted across a stream's chunks.
private final class Counter: Sendable {
    private let count = Mutex(0)

    /// Adds `n`; the count after.
    func add(_ n: Int) -> Int {
        count.withLock {
            $0 += n; return $0
        }
    }
    var value: Int { count.withLock { $0 } }
}

/// The groups of duplicates found in rows sorted by their values: a run of
/// two rows or more of one value is a group.
private final class GroupRun: Sendable {
    private struct State {
        var current = DuplicateGroup(values: [], identifiers: [])
        var emitted = 0
    }
    private let state = Mutex(State())
    private let limit: Int?

    init(limit: Int?) { self.limit = limit }

    /// Whether as many groups as asked for were handed out.
    var full: Bool { state.withLock { s in limit.map { s.emitted >= $0 } ?? false } }

    /// Adds a row; the group it ends, if one ended.
    func add(_ values: [Value], _ identifier: Identifier) -> DuplicateGroup? {
        state.withLock { s in
            if !s.current.values.isEmpty, values == s.current.values {
                s.current.identifiers.append(identifier)
                return nil
            }
            let ended = s.current.identifiers.count > 1 ? s.current : nil
            if ended != nil { s.emitted += 1 }
            s.current = DuplicateGroup(values: values, identifiers: [identifier])
            return ended
        }
    }

    /// The last run, when it is a group and the limit allows it.
    func last() -> DuplicateGroup? {
        state.withLock { s in
            guard s.current.identifiers.count > 1, limit.map({ s.emitted < $0 }) ?? true else { return nil }
            return s.current
        }
    }
}

/// The changes of rows of `depot_changes`, with the names of the layouts
/// their compact values follow, each looked up once.
package struct HistoryLayouts {
    private var names: [Int64: [String]] = [:]

    package init() {}

    /// The changes a row of `depot_changes` holds, its columns read as
    /// `txn, entity, identifier, kind, fields, tombstone, old, new, layout,
    /// span`: one, or a run of new records' (`span` of them, their
    /// identifiers and values one a line). Compact values (arrays) come as
    /// objects, under the row's layout (an insert's, a delete's) or its
    /// fields (an update's) (``CompactValues``).
    package mutating func changes(ofRow row: [Value], _ session: any SQLSession, store: String) async throws
        -> [HistoryChange]
    {
        guard let txn = row[0].integer, let kindText = row[3].text else { return [] }
        let kind = ChangeKind(rawValue: kindText) ?? .update
        var fields: [String]? = nil
        if let text = row[4].text, case .array(let list)? = MiniJSON.parse(text) {
            fields = list.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        let layout = row[8].integer
        var layoutNames: [String] = []
        if let layout {
            if names[layout] == nil {
                let text = try await session.rows(
                    "SELECT fields FROM \(table: "depot_layouts") WHERE id = \(bind: layout)"
                ).first?.first?.text
                var found: [String] = []
                if let text, case .array(let list)? = MiniJSON.parse(text) {
                    found = list.compactMap { if case .string(let s) = $0 { s } else { nil } }
                }
                names[layout] = found
            }
            layoutNames = names[layout] ?? []
        }
        let keys = layout != nil ? layoutNames : fields ?? []
        func object(_ text: Substring?) -> String? {
            guard let text else { return nil }
            return text.utf8.first == UInt8(ascii: "[") ? CompactValues.object(String(text), names: keys) : String(text)
        }
        let span = Int(row[9].integer ?? 1)
        func split(_ value: Value) -> [Substring?] {
            guard let text = value.text else { return Array(repeating: nil, count: span) }
            return span == 1
                ? [text[...]]
                : text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
                    Substring($0)
                }
        }
        let (identifiers, olds, news) = (split(row[2]), split(row[6]), split(row[7]))
        guard identifiers.count == span, olds.count == span, news.count == span else {
            throw DepotError(
                .database,
                (store.isEmpty ? "" : "store \(JSONText.quoted(store)): ") + "a row of history transaction \(txn) "
                    + "holds \(span) changes but not as many identifiers or values")
        }
        return (0..<span).map { k in
            HistoryChange(
                entity: row[1].text ?? "", identifier: identifiers[k].map(String.init) ?? "", kind: kind,
                fields: fields, tombstone: row[5].text, old: object(olds[k]), new: object(news[k]))
        }
    }
}

/// Rows read by ``SQLSession/rows(_:)`` as `fields`' values (``Value/stored(as:)``).
package func typed(_ rows: [[Value]], as fields: [Field]) -> [[Value]] {
    rows.map { row in row.indices.map { row[$0].stored(as: $0 < fields.count ? fields[$0].type : .string) } }
}

/// A read of one statement as a session: each statement in a snapshot of its own.
private final class OneRead: SQLSession {
    let reads: any StoreReading

    init(_ reads: any StoreReading) { self.reads = reads }

    func rows(_ statement: SQLStatement) async throws -> [[Value]] { try await reads.rows(statement) }
}
