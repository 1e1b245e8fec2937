import GRDB
import GRDBSQLite

/// Follows a fetch's result through the history: a first result, then what
/// entered, changed or left it with each batch of transactions (DESIGN §11).
///
/// The cost of ``changes()`` follows the transactions, not the result: it
/// reads the changes of the fetch's entity after the last token, and
/// re-evaluates the predicate on the touched identifiers only, one indexed
/// lookup each. The feed remembers which identifiers are in the result (a
/// set of their JSON texts) to tell entering from changing and leaving.
///
/// A fetch whose key paths or prefetched relationships read other entities
/// (DESIGN §12) can change when they do: a customer's new name changes the
/// orders that embed it, or moves them in or out of `customer.name
/// BEGINSWITH "A"`. When such an entity has changes after the last token,
/// the result is read again whole and compared, record by record, with the
/// one remembered (its JSON, embedded records included); the cost then
/// follows the result, only for those commits.
///
/// For example:
///
/// ```swift
/// let feed = try ResultFeed(reader: store.reader, FetchDescriptor(entity: "Trip", where: "budget > 1000"))
/// let (token, records) = try await feed.start()
/// var version = store.reader.commitCount
/// while await store.reader.waitForCommit(after: version) {
///     version = store.reader.commitCount
///     let changes = try await feed.changes()
///     if !changes.isEmpty { print(changes.inserted.count, changes.updated.count, changes.deleted.count) }
/// }
/// ```
///
/// A feed is used by one task at a time.
// @unchecked: mutable state, used by one task at a time (its stream's); Sendable to cross into the read.
public final class ResultFeed: @unchecked Sendable {
    /// Where the feed reads its store: an SQLite store's reader or a
    /// PostgreSQL store (``ResultFeedSource``).
    private let source: any ResultFeedSource
    private let query: FetchQuery
    /// The identifiers in the result, as JSON text.
    private var members: Set<String> = []
    /// For a query whose key paths or prefetched relationships read other
    /// entities (``FetchQuery/related``): each record of the result as JSON
    /// (embedded records included), by identifier, to tell which records a
    /// change to a related record changed.
    private var rows: [String: String] = [:]
    /// The token the result (or the last changes) reflects.
    private var last: Int64 = 0
    /// After ``resume(after:)``: the first changes cannot know whether a
    /// touched record was in the client's result at its token.
    private var uncertain = false

    /// Checks the descriptor: `limit`, `offset` and `sectionBy` are refused,
    /// since a change would move records across their bounds. Records
    /// always carry their identifier fields, added in front of `fields`
    /// when it lacks them.
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` for those;
    ///   as ``StoreReading/fetch(_:)`` for the rest.
    public convenience init(reader: StoreReader, _ descriptor: FetchDescriptor) throws {
        try self.init(schema: reader.schema, dialect: .sqlite, descriptor) {
            SQLiteFeedSource(reader: reader, query: $0)
        }
    }

    /// A feed of `descriptor` read in snapshots of `reads` (``SnapshotFeedSource``).
    package convenience init(reads: any StoreReading, _ descriptor: FetchDescriptor) throws {
        try self.init(schema: reads.schema, dialect: reads.dialect, descriptor) {
            SnapshotFeedSource(reads: reads, query: $0)
        }
    }

    /// A feed of `descriptor` compiled for `dialect`, reading through the
    /// source `source` makes for the compiled query.
    package init(
        schema: StoreSchema, dialect: any SQLDialect, _ descriptor: FetchDescriptor,
        source: (FetchQuery) -> any ResultFeedSource
    ) throws {
        for (given, name) in [
            (descriptor.limit != nil, "limit"), (descriptor.offset != nil, "offset"),
            (descriptor.sectionBy != nil, "section_by")
        ] where given {
            throw DepotError(
                .invalidArgument,
                "a live fetch with changes cannot take \(name): a change would move "
                    + "records across it; fetch the whole result, or watch without changes")
        }
        let entity = try schema.entity(descriptor.entity)
        // Records carry their identifier, which later changes refer to.
        var descriptor = descriptor
        if let fields = descriptor.fields {
            descriptor.fields = entity.identifier.filter { !fields.contains($0) } + fields
        }
        self.query = try FetchQuery(descriptor, schema: schema, dialect: dialect)
        let names = query.fields.map(\.name)
        self.identifierPositions = entity.identifier.map { names.firstIndex(of: $0)! }
        self.source = source(query)
    }

    /// Where the identifier's fields are in each record.
    private let identifierPositions: [Int]

    /// The result now, and the token of the newest transaction it reflects
    /// (`nil` when the store has no history), read in one snapshot.
    public func start() async throws -> (token: HistoryToken?, records: RecordSet) {
        let (token, issued, records) = try await source.start()
        let positions = identifierPositions
        members = Set(records.rows.map { row in Identifier(positions.map { row[$0] }).json })
        if !query.related.isEmpty {
            rows = Dictionary(
                records.rows.indices.map { i in
                    (Identifier(positions.map { records.rows[i][$0] }).json, records.jsonObject(row: i))
                }, uniquingKeysWith: { a, _ in a })
        }
        last = token ?? issued
        uncertain = false
        startToken = token.map(HistoryToken.init)
        hasStarted = true
        return (token.map(HistoryToken.init), records)
    }

    /// What ``start()`` left a feed knowing, for another feed of the same
    /// descriptor on the same store to start from (``start(from:)``): live
    /// fetches opened together share one read and one result (issue #35).
    public struct Started: Sendable {
        /// The token the first result reflects, as ``start()`` returned it.
        public let token: HistoryToken?
        fileprivate let last: Int64
        fileprivate let members: Set<String>
        fileprivate let rows: [String: String]
    }

    /// What the feed knows now, once started (`nil` before ``start()`` and
    /// after ``resume(after:)``, whose first changes are uncertain).
    public var started: Started? {
        guard hasStarted else { return nil }
        return Started(token: startToken, last: last, members: members, rows: rows)
    }
    private var hasStarted = false
    /// The token ``start()`` returned (`nil` for a store without history).
    private var startToken: HistoryToken?

    /// Starts where another feed of the same descriptor started: its next
    /// ``changes()`` are those after that feed's first result.
    public func start(from started: Started) {
        members = started.members
        rows = started.rows
        last = started.last
        uncertain = false
        startToken = started.token
        hasStarted = true
    }

    /// Resumes after `token`, the last one a client saw: the next
    /// ``changes()`` are those after it.
    ///
    /// The first of them cannot know which touched records the client had:
    /// a touched record that matches is `inserted` when its first change
    /// after `token` is its insert and `updated` otherwise; one that does not
    /// match is in `deleted` (a client drops it if it had it).
    ///
    /// - Throws: ``DepotError/Code/historyExpired`` when transactions after
    ///   `token` were pruned; ``DepotError/Code/invalidToken`` for a token
    ///   never issued.
    public func resume(after token: HistoryToken) async throws {
        members = Set(try await source.resume(after: token.id))
        rows = [:]
        last = token.id
        uncertain = true
        hasStarted = false
    }

    /// What changed in the result since the last call (or ``start()``).
    ///
    /// - Throws: ``DepotError/Code/historyExpired`` when the transactions
    ///   since were pruned under the feed.
    public func changes() async throws -> ResultChanges {
        // After a resume, the changes since a token may be many: read on its
        // own, so that it does not hold up the other streams.
        let (token, touchedOrNil, whole) = try await source.changes(after: last, live: !uncertain)
        if let whole { return difference(whole, token: token) }
        let touched = touchedOrNil ?? Touched(records: [], found: RecordSet(fields: query.fields, rows: []))
        var inserted: [Int] = [], updated: [Int] = []
        var result = ResultChanges(
            token: token > 0 ? HistoryToken(token) : nil,
            inserted: RecordSet(fields: query.fields, rows: []),
            updated: RecordSet(fields: query.fields, rows: []), deleted: [])
        // A change to a column that names an embedded record changes the record too.
        let fetched = Set(query.selected.map(\.name))
        for record in touched.records {
            if let row = record.row {
                if uncertain {
                    // Whether the client had it is unknown: what it was before its token decides.
                    if record.change.firstKind == .insert {
                        inserted.append(row)
                    } else {
                        updated.append(row)
                    }
                } else if !members.contains(record.id) {
                    inserted.append(row)
                } else if record.change.structural || !record.change.fields.isDisjoint(with: fetched) {
                    updated.append(row)
                }
                members.insert(record.id)
                if !query.related.isEmpty { rows[record.id] = touched.found.jsonObject(row: row) }
            } else if uncertain || members.contains(record.id) {
                result.deleted.append(record.identifier)
                members.remove(record.id)
                rows[record.id] = nil
            }
        }
        if !inserted.isEmpty { result.inserted = touched.found.subset(inserted) }
        if !updated.isEmpty { result.updated = touched.found.subset(updated) }
        last = max(last, token)
        uncertain = false
        return result
    }

    /// The changes between the rows remembered and the result read again
    /// whole: new identifiers entered, missing ones left, and those whose
    /// values differ changed (all present after a resume, whose rows are unknown).
    private func difference(_ whole: RecordSet, token: Int64) -> ResultChanges {
        var result = ResultChanges(
            token: token > 0 ? HistoryToken(token) : nil,
            inserted: RecordSet(fields: query.fields, rows: []),
            updated: RecordSet(fields: query.fields, rows: []), deleted: [])
        var now: [String: String] = [:]
        now.reserveCapacity(whole.rows.count)
        var inserted: [Int] = [], updated: [Int] = []
        for (i, row) in whole.rows.enumerated() {
            let id = Identifier(identifierPositions.map { row[$0] }).json
            let json = whole.jsonObject(row: i)
            now[id] = json
            if !members.contains(id) {
                inserted.append(i)
            } else if uncertain || rows[id] != json {
                updated.append(i)
            }
        }
        if !inserted.isEmpty { result.inserted = whole.subset(inserted) }
        if !updated.isEmpty { result.updated = whole.subset(updated) }
        for id in members where now[id] == nil {
            if let identifier = try? Identifier(json: id, fieldCount: identifierPositions.count) {
                result.deleted.append(identifier)
            }
        }
        members = Set(now.keys)
        rows = now
        last = max(last, token)
        uncertain = false
        return result
    }

    /// What the changes after a token did to one record.
    package struct Change: Sendable {
        var firstKind: ChangeKind
        var structural = false
        var fields: Set<String> = []
    }

    /// A record some change touched, as the predicate sees it now: its
    /// row in ``Touched/found`` when it matches, `nil` when it does not (or is gone).
    package struct TouchedRecord: Sendable {
        var id: String
        var identifier: Identifier
        var change: Change
        var row: Int?

        package init(id: String, identifier: Identifier, change: Change, row: Int?) {
            self.id = id
            self.identifier = identifier
            self.change = change
            self.row = row
        }
    }

    /// The records changes touched, and those of them that match, with
    /// their prefetched records.
    package struct Touched: Sendable {
        var records: [TouchedRecord]
        var found: RecordSet

        package init(records: [TouchedRecord], found: RecordSet) {
            self.records = records
            self.found = found
        }
    }

    /// The changes of one entity, in order (its rows of `depot_changes`:
    /// identifier, kind, fields), as what they did to each record, and the
    /// records in the order first touched.
    package struct TouchedChanges: Sendable {
        package private(set) var order: [String] = []
        package private(set) var changes: [String: Change] = [:]

        package init() {}

        package mutating func add(identifier id: String, kind: String, fields: String?) {
            let kind = ChangeKind(rawValue: kind) ?? .update
            if changes[id] == nil {
                order.append(id)
                changes[id] = Change(firstKind: kind)
            }
            switch kind {
            case .insert, .delete: changes[id]!.structural = true
            case .update:
                if let fields, case .array(let names)? = MiniJSON.parse(fields) {
                    for case .string(let name) in names { changes[id]!.fields.insert(name) }
                }
            }
        }
    }
}

/// What a ``ResultFeed`` reads of its store, each call in one snapshot.
package protocol ResultFeedSource: Sendable {
    /// The newest transaction's token (nil when the history is empty), the
    /// last token issued, and the query's records.
    func start() async throws -> (token: Int64?, issued: Int64, records: RecordSet)
    /// Checks that the history after `after` is whole (``DepotError/Code/historyExpired``,
    /// ``DepotError/Code/invalidToken``); the identifiers (JSON) the query selects now.
    func resume(after: Int64) async throws -> [String]
    /// Checks the history after `after`; the newest token; then, when an
    /// entity the query reads through key paths changed after `after`, the
    /// records whole; otherwise the query's entity's changes after `after`
    /// with the records they touched looked up again with the predicate.
    /// `live`: read with the other streams woken by the same commit.
    func changes(after: Int64, live: Bool) async throws
        -> (token: Int64, touched: ResultFeed.Touched?, whole: RecordSet?)
}

/// A feed's reads of an SQLite store.
package struct SQLiteFeedSource: ResultFeedSource {
    let reader: StoreReader
    let query: FetchQuery
    /// A touched record looked up again, if the predicate still matches it;
    /// made once, not at each event.
    let lookupSQL: String

    init(reader: StoreReader, query: FetchQuery) {
        self.reader = reader
        self.query = query
        let entity = query.entity
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        self.lookupSQL =
            "SELECT " + query.selected.map(query.column).joined(separator: ", ")
            + " FROM \(entity.table) WHERE " + idFields.map { "\(SQL.quote($0.name)) = ?" }.joined(separator: " AND ")
            + " AND (\(query.predicate.sql))"
    }

    package func start() async throws -> (token: Int64?, issued: Int64, records: RecordSet) {
        let query = self.query
        return try await reader.read { db in
            let token = try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(id) FROM depot_transactions"))
            return (token, try HistoryQuery.lastIssued(db), try query.records(db))
        }
    }

    package func resume(after: Int64) async throws -> [String] {
        let (query, store) = (self.query, reader.storeName)
        return try await reader.read { db in
            try HistoryQuery.check(db, store: store, after: after)
            return try query.identifiers(db).map(\.json)
        }
    }

    package func changes(after: Int64, live: Bool) async throws -> (
        token: Int64, touched: ResultFeed.Touched?, whole: RecordSet?
    ) {
        let (query, store, lookupSQL) = (self.query, reader.storeName, self.lookupSQL)
        // With the other streams woken by the same commit, in one snapshot
        // (``StoreReader/liveRead(_:)``).
        let read: @Sendable (Database) throws -> (Int64, ResultFeed.Touched?, RecordSet?) = { db in
            try HistoryQuery.check(db, store: store, after: after)
            let token = try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(id) FROM depot_transactions")) ?? after
            // A change to a record that a key path reads can change any
            // record's membership or values: the result is read again whole.
            if try Self.relatedChanged(db, query: query, after: after) {
                return (token, nil, try query.records(db))
            }
            return (token, try Self.touched(db, query: query, lookupSQL: lookupSQL, after: after), nil)
        }
        return try await live ? reader.liveRead(read) : reader.read(read)
    }

    /// Whether an entity that the query's key paths read changed after `after`.
    private static func relatedChanged(_ db: Database, query: FetchQuery, after: Int64) throws -> Bool {
        for entity in query.related.sorted() {
            let changes = try db.cachedStatement(sql: changesSQL)
            if try Row.fetchOne(changes, arguments: [after, entity]) != nil { return true }
        }
        return false
    }

    /// The changes of one entity after a token. ORDER BY txn, id is the
    /// order of the txn index, so SQLite searches it; ORDER BY id alone made
    /// it scan the whole history on every event (ResultFeedTests checks the plan).
    package static let changesSQL =
        "SELECT identifier, kind, fields FROM depot_changes "
        + "WHERE txn > ? AND entity = ? ORDER BY txn, id"

    /// The changes of the entity after `after`, the touched records looked up
    /// again with the predicate.
    private static func touched(
        _ db: Database, query: FetchQuery, lookupSQL: String,
        after: Int64
    ) throws -> ResultFeed.Touched {
        let entity = query.entity
        var collected = ResultFeed.TouchedChanges()
        let changes = try db.cachedStatement(sql: changesSQL)
        let cursor = try Row.fetchCursor(changes, arguments: [after, entity.name])
        while let row = try cursor.next() { collected.add(identifier: row[0], kind: row[1], fields: row[2]) }
        let (order, touched) = (collected.order, collected.changes)
        var found = RecordSet(fields: query.fields, rows: [])
        guard !order.isEmpty else { return ResultFeed.Touched(records: [], found: found) }
        let idFields = entity.identifierIndexes.map { entity.fields[$0] }
        // Cached by its text, which holds the predicate's shape, not its
        // values (bound below): the cache grows with the shapes clients
        // watch, not with the watches. Compiling it at every event was a
        // twentieth of an event's cost with 100 watches.
        let lookup = try db.cachedStatement(sql: lookupSQL)
        let statement = lookup.sqliteStatement
        sqlite3_reset(statement)  // in case an earlier use stopped on an error
        // The computed fields' values first (the select list), then the
        // identifier's, then the predicate's.
        let computed = query.computedArguments
        for (i, v) in query.predicate.arguments.enumerated() {
            SQL.bind(v, to: statement, at: Int32(i < computed ? i + 1 : idFields.count + i + 1))
        }
        var records: [ResultFeed.TouchedRecord] = []
        records.reserveCapacity(order.count)
        for id in order {
            let identifier = try Identifier(json: id, fieldCount: idFields.count)
            for (k, field) in idFields.enumerated() {
                SQL.bind(
                    try ValueConversion.convert(identifier.values[k], to: field), to: statement,
                    at: Int32(computed + k + 1))
            }
            var row: Int? = nil
            if try SQL.step(statement, db) {
                row = found.rows.count
                found.rows.append(
                    query.selected.indices.map { SQL.column(statement, Int32($0), as: query.selected[$0].type) })
            }
            sqlite3_reset(statement)
            records.append(ResultFeed.TouchedRecord(id: id, identifier: identifier, change: touched[id]!, row: row))
        }
        try query.embed(db, into: &found)
        return ResultFeed.Touched(records: records, found: found)
    }
}
