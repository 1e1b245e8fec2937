import GRDB
import GRDBSQLite

extension StoreReader {
    /// The records a descriptor selects, in its order.
    ///
    /// - Throws: ``DepotError`` for an unknown entity or field, a predicate
    ///   that does not parse or compares a field with a value of another type,
    ///   a negative limit or offset.
    public func fetch(_ descriptor: FetchDescriptor) async throws -> RecordSet {
        let query = try FetchQuery(descriptor, entity: entity(descriptor.entity))
        return try await read { db in try query.records(db) }
    }

    /// Checks a descriptor without running it: its entity, fields, sort, and
    /// predicate with its arguments, as a fetch would.
    ///
    /// For example, to refuse a batch job's predicate before queueing it:
    ///
    /// ```swift
    /// try store.reader.check(FetchDescriptor(entity: "Trip", where: "budget >"))   // throws, position 9
    /// ```
    ///
    /// - Throws: the ``DepotError`` that ``fetch(_:)`` would throw for it.
    public func check(_ descriptor: FetchDescriptor) throws {
        _ = try FetchQuery(descriptor, entity: entity(descriptor.entity))
    }

    /// The records a descriptor selects, grouped by its `sectionBy` field.
    ///
    /// - Throws: as ``fetch(_:)``, and ``DepotError/Code/invalidArgument``
    ///   when the descriptor has no `sectionBy`.
    public func fetchSections(_ descriptor: FetchDescriptor) async throws -> [RecordSection] {
        guard let sectionField = descriptor.sectionBy else {
            throw DepotError(.invalidArgument, "a sectioned fetch needs section_by")
        }
        let query = try FetchQuery(descriptor, entity: entity(descriptor.entity))
        let records = try await read { db in try query.records(db) }
        guard let column = records.fields.firstIndex(where: { $0.name == sectionField }) else { return [] }
        var sections: [RecordSection] = []
        for row in records.rows {
            if sections.last?.key != row[column] {
                sections.append(RecordSection(key: row[column], records: RecordSet(fields: records.fields, rows: [])))
            }
            sections[sections.count - 1].records.rows.append(row)
        }
        return sections
    }

    /// The number of records a descriptor selects, without loading them
    /// (`fetchCount`); `limit` and `offset` apply.
    public func count(_ descriptor: FetchDescriptor) async throws -> Int {
        let query = try FetchQuery(descriptor, entity: entity(descriptor.entity))
        return try await read { db in try query.count(db) }
    }

    /// The identifiers of the records a descriptor selects, in its order
    /// (`fetchIdentifiers`).
    public func identifiers(_ descriptor: FetchDescriptor) async throws -> [Identifier] {
        let query = try FetchQuery(descriptor, entity: entity(descriptor.entity))
        return try await read { db in try query.identifiers(db) }
    }

    /// Every record a descriptor's predicate selects, in batches, in storage
    /// order (`enumerate(batchSize:)`).
    ///
    /// Each batch is one short read that resumes after the last record's key,
    /// not at an offset, so a walk over millions of records keeps memory flat
    /// and never holds a read snapshot for long. Records committed meanwhile
    /// behind the walk's position are included. The descriptor's `sort`,
    /// `limit` and `offset` are not used.
    ///
    /// For example:
    ///
    /// ```swift
    /// for try await batch in store.reader.enumerate(FetchDescriptor(entity: "Trip"), batchSize: 5_000) {
    ///     total += batch.count
    /// }
    /// ```
    public func enumerate(_ descriptor: FetchDescriptor, batchSize: Int = 5_000) -> RecordBatches {
        RecordBatches(reader: self, descriptor: descriptor, batchSize: max(1, batchSize))
    }
}

/// Batches of records, read by key: see ``StoreReader/enumerate(_:batchSize:)``.
public struct RecordBatches: AsyncSequence, Sendable {
    /// A batch of records.
    public typealias Element = RecordSet

    let reader: StoreReader
    let descriptor: FetchDescriptor
    let batchSize: Int

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator { Iterator(batches: self) }

    /// Reads one batch per call.
    public struct Iterator: AsyncIteratorProtocol {
        let batches: RecordBatches
        var after: Int64 = 0
        var done = false
        var query: FetchQuery?

        /// The next batch, or `nil` after the last record.
        public mutating func next() async throws -> RecordSet? {
            guard !done else { return nil }
            try Task.checkCancellation()
            if query == nil {
                var d = batches.descriptor
                d.sort = []
                d.limit = nil
                d.offset = nil
                d.sectionBy = nil
                query = try FetchQuery(d, entity: batches.reader.entity(d.entity))
            }
            let q = query!, after = after, size = batches.batchSize
            let (records, last) = try await batches.reader.read { db in try q.page(db, after: after, limit: size) }
            if records.rows.count < size { done = true }
            guard let last, !records.rows.isEmpty else { return nil }
            self.after = last
            return records
        }
    }
}

/// A fetch descriptor checked and compiled to SQL.
struct FetchQuery: Sendable {
    let entity: EntitySchema
    let fields: [Field]
    let predicate: SQLFragment
    let orderBy: String
    let limit: Int?
    let offset: Int?

    init(_ d: FetchDescriptor, entity: EntitySchema) throws {
        self.entity = entity
        if let limit = d.limit, limit < 0 { throw DepotError(.invalidArgument, "limit cannot be negative") }
        if let offset = d.offset, offset < 0 { throw DepotError(.invalidArgument, "offset cannot be negative") }
        limit = d.limit
        offset = d.offset
        var fields: [Field]
        if let names = d.fields {
            guard !names.isEmpty else {
                throw DepotError(.invalidArgument, "fields is empty; omit it to fetch every field")
            }
            fields = try names.map { try entity.field(named: $0) }
        } else {
            fields = entity.fields
        }
        var sort = d.sort
        if let section = d.sectionBy {
            let field = try entity.field(named: section)
            if !fields.contains(field) { fields.insert(field, at: 0) }
            if sort.first?.field != section { sort.insert(SortDescriptor(section), at: 0) }
        }
        self.fields = fields
        predicate = try PredicateCompiler.compile(d.predicate, entity: entity, arguments: d.arguments)
        var terms: [String] = []
        for key in sort {
            _ = try entity.field(named: key.field)
            terms.append("\(SQL.quote(key.field)) \(key.descending ? "DESC" : "ASC") NULLS "
                + (key.effectiveNulls == .first ? "FIRST" : "LAST"))
        }
        terms.append("rowid")
        orderBy = terms.joined(separator: ", ")
    }

    private var columns: String { fields.map { SQL.quote($0.name) }.joined(separator: ", ") }

    private var paging: String {
        switch (limit, offset) {
        case (nil, nil): ""
        case (let l, let o): " LIMIT \(l ?? -1) OFFSET \(o ?? 0)"
        }
    }

    private func run(_ db: Database, _ sql: String, _ arguments: [Value], row: (OpaquePointer) -> Void) throws {
        let preparedStatement = try db.makeStatement(sql: sql)
        defer { withExtendedLifetime(preparedStatement) {} }
        let statement = preparedStatement.sqliteStatement
        for (i, v) in arguments.enumerated() { SQL.bind(v, to: statement, at: Int32(i + 1)) }
        defer { sqlite3_reset(statement) }
        while try SQL.step(statement, db) { row(statement) }
    }

    func records(_ db: Database) throws -> RecordSet {
        var rows: [[Value]] = []
        let fields = self.fields
        try run(db, "SELECT \(columns) FROM \(entity.table) WHERE \(predicate.sql) ORDER BY \(orderBy)\(paging)",
                predicate.arguments) { s in
            rows.append(fields.indices.map { SQL.column(s, Int32($0), as: fields[$0].type) })
        }
        return RecordSet(fields: fields, rows: rows)
    }

    func page(_ db: Database, after: Int64, limit: Int) throws -> (RecordSet, Int64?) {
        var rows: [[Value]] = []
        var last: Int64?
        let fields = self.fields
        try run(db, "SELECT rowid, \(columns) FROM \(entity.table) WHERE rowid > ? AND \(predicate.sql) "
                + "ORDER BY rowid LIMIT \(limit)", [.int(after)] + predicate.arguments) { s in
            last = sqlite3_column_int64(s, 0)
            rows.append(fields.indices.map { SQL.column(s, Int32($0 + 1), as: fields[$0].type) })
        }
        return (RecordSet(fields: fields, rows: rows), last)
    }

    func count(_ db: Database) throws -> Int {
        var n = 0
        let sql = paging.isEmpty
            ? "SELECT count(*) FROM \(entity.table) WHERE \(predicate.sql)"
            : "SELECT count(*) FROM (SELECT 1 FROM \(entity.table) WHERE \(predicate.sql)\(paging))"
        try run(db, sql, predicate.arguments) { n = Int(sqlite3_column_int64($0, 0)) }
        return n
    }

    func identifiers(_ db: Database) throws -> [Identifier] {
        var ids: [Identifier] = []
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        let columns = idFields.map { SQL.quote($0.name) }.joined(separator: ", ")
        try run(db, "SELECT \(columns) FROM \(entity.table) WHERE \(predicate.sql) ORDER BY \(orderBy)\(paging)",
                predicate.arguments) { s in
            ids.append(Identifier(idFields.indices.map { SQL.column(s, Int32($0), as: idFields[$0].type) }))
        }
        return ids
    }
}
