import Foundation
import GRDB
import GRDBSQLite

/// The writes of one save: one SQLite transaction with its history.
///
/// A `SaveContext` exists only inside ``Store/save(author:job:_:)``. Every
/// record it writes, updates or deletes logs one change in the save's history
/// transaction; a save that changes nothing logs nothing. A checkpoint set
/// in the save (``WriteContext/setCheckpoint(job:data:)``) commits
/// atomically with the records.
///
/// For example:
///
/// ```swift
/// let outcome = try await store.save(author: "import", job: "j42") { save in
///     try save.write(batch, policy: .upsert)
/// }
/// ```
public final class SaveContext {
    let db: Database
    let store: StoreSchema
    private(set) var author: String
    let job: String?
    private(set) var transactionID: Int64?
    /// The last history transaction this SQLite transaction made, of any
    /// of the saves it holds (a group commit's): the token the commit announces.
    private(set) var lastTransactionID: Int64?
    private var writers: [WriterKey: RowWriter] = [:]

    init(db: Database, store: StoreSchema, author: String, job: String?) {
        self.db = db
        self.store = store
        self.author = author
        self.job = job
    }

    /// Writes a batch of records under a conflict policy.
    ///
    /// - Returns: what happened to the records, with the rows refused and why
    ///   (a null identifier or required field, a required field missing from
    ///   a new record).
    /// - Throws: ``DepotError/Code/conflict`` under ``ConflictPolicy/fail``
    ///   when a record exists (the whole save rolls back);
    ///   ``DepotError/Code/unknownEntity`` or ``DepotError/Code/unknownField``
    ///   for a batch that does not fit the schema.
    /// - Parameter sourceRowidFloor: for imports: the entity's greatest rowid
    ///   when the import started, so that records met again are counted as
    ///   in-file ``WriteCounts/duplicates`` (see ``ImportCheckpoint``).
    /// - Parameter deferReferences: keep references to records that do not
    ///   exist (yet) instead of rejecting their rows (`references = "defer"`,
    ///   DESIGN §12); ``StoreReading/danglingReferences(limit:)`` lists them.
    public func write(
        _ batch: RecordBatch, policy: ConflictPolicy, sourceRowidFloor: Int64? = nil,
        deferReferences: Bool = false
    ) throws -> WriteCounts {
        guard !batch.isEmpty else { return WriteCounts() }
        let key = WriterKey(
            entity: batch.entity, columns: batch.columns, policy: policy, deferReferences: deferReferences)
        let writer: RowWriter
        if let cached = writers[key] {
            writer = cached
        } else {
            writer = try RowWriter(
                context: self, entity: store.entity(batch.entity),
                columns: batch.columns, policy: policy, deferReferences: deferReferences)
            writers[key] = writer
        }
        return try writer.write(batch, sourceRowidFloor: sourceRowidFloor)
    }

    // MARK: - History

    /// The id of this save's history transaction, created on the first change.
    func historyTransaction() throws -> Int64 {
        if let transactionID { return transactionID }
        let id = try nextToken()
        try db.execute(
            sql: "INSERT INTO depot_transactions(id, timestamp, author, job) VALUES (?, ?, ?, ?)",
            arguments: [id, Timestamp.now(), author, job])
        transactionID = id
        lastTransactionID = id
        return id
    }

    /// Ends this save's history transaction: the changes after it go to a
    /// new one, by `author` (the next save of a group sharing one commit).
    func beginHistoryTransaction(author: String) throws {
        try flushChanges()
        transactionID = nil
        peeked = nil
        self.author = author
    }

    /// What a savepoint restores of the context when it rolls back.
    struct Mark {
        fileprivate var author: String
        fileprivate var transactionID: Int64?
        fileprivate var lastTransactionID: Int64?
        fileprivate var peeked: Int64?
    }

    /// Flushes the pending changes and sets a savepoint; its mark.
    func savepoint() throws -> Mark {
        try flushChanges()
        try db.execute(sql: "SAVEPOINT depot_save")
        return Mark(
            author: author, transactionID: transactionID, lastTransactionID: lastTransactionID, peeked: peeked)
    }

    /// Keeps what was written since the savepoint.
    func release() throws {
        try flushChanges()
        try db.execute(sql: "RELEASE depot_save")
    }

    /// Undoes what was written since the savepoint of `mark`, its history
    /// transaction with it.
    func rollback(to mark: Mark) throws {
        pendingChanges.removeAll()
        author = mark.author
        transactionID = mark.transactionID
        lastTransactionID = mark.lastTransactionID
        peeked = mark.peeked
        try db.execute(sql: "ROLLBACK TO depot_save")
        try db.execute(sql: "RELEASE depot_save")
    }

    /// The id this save's history transaction has or will have, which the
    /// records it writes keep as the token of their last change
    /// (`depot_token`) before their change is logged: the next id of
    /// `depot_transactions`, which no other save can take while this one
    /// holds the store's write lock.
    func nextToken() throws -> Int64 {
        if let transactionID { return transactionID }
        if let peeked { return peeked }
        let id = try HistoryQuery.lastIssued(db) + 1
        peeked = id
        return id
    }

    private var peeked: Int64?

    /// Logs one change; `identifier`, `fields`, `tombstone`, `old` and `new`
    /// are JSON text (`old` and `new` only for entities that keep values).
    func logChange(
        entity: String, identifier: String, kind: ChangeKind,
        fields: String? = nil, tombstone: String? = nil,
        old: String? = nil, new: String? = nil
    ) throws {
        try logChange(
            entity: entity, identifier: identifier, kind: kind, fields: fields, tombstone: tombstone,
            oldBytes: old.map { Array($0.utf8) }, newBytes: new.map { Array($0.utf8) })
    }

    /// Logs one change with its values as UTF-8 JSON bytes (the import's
    /// path, which builds them in reused buffers): objects, or arrays in
    /// the order of `fields` (an update) or of `layout` (an insert or a
    /// delete; see ``layout(of:)``).
    ///
    /// The change is kept in ``pendingChanges`` and inserted with others in
    /// one multi-row statement (``flushChanges()``): nothing reads
    /// `depot_changes` inside a save, and the save flushes before it commits.
    func logChange(
        entity: String, identifier: String, kind: ChangeKind, fields: String? = nil,
        tombstone: String? = nil, oldBytes: [UInt8]?, newBytes: [UInt8]?, layout: Int64? = nil
    ) throws {
        let txn = try historyTransaction()
        pendingChanges.append(
            txn: txn, entity: entity, identifier: identifier, kind: kind, fields: fields,
            tombstone: tombstone, old: oldBytes, new: newBytes, layout: layout)
        if pendingChanges.count == store.changesPerStatement { try flushChanges() }
    }

    private var pendingChanges = PendingChanges()

    /// Inserts the pending changes, in the order they were logged: whole
    /// statements of ``StoreConfiguration/changesPerStatement`` rows, the
    /// rest one by one.
    func flushChanges() throws {
        let count = pendingChanges.count
        guard count > 0 else { return }
        defer { pendingChanges.removeAll() }
        let columns =
            "INSERT INTO depot_changes(txn, entity, identifier, kind, fields, tombstone, old, new, layout) VALUES "
        let row = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
        var done = 0
        if count == store.changesPerStatement {
            let statement = try db.cachedStatement(
                sql: columns
                    + Array(repeating: row, count: count)
                    .joined(separator: ", ")
            ).sqliteStatement
            pendingChanges.bind(0..<count, to: statement)
            try SQL.step(statement, db)
            sqlite3_reset(statement)
            done = count
        }
        if done < count {
            let statement = try db.cachedStatement(sql: columns + row).sqliteStatement
            for i in done..<count {
                pendingChanges.bind(i..<i + 1, to: statement)
                try SQL.step(statement, db)
                sqlite3_reset(statement)
            }
        }
    }

    /// The id of the layout of `entity`'s fields, in their order, in
    /// `depot_layouts`: written the first time, then found again.
    func layout(of entity: EntitySchema) throws -> Int64 {
        let fields = JSONText.array(entity.fields.map(\.name))
        if let id = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM depot_layouts WHERE entity = ? AND fields = ?"),
            arguments: [entity.name, fields])
        {
            return id
        }
        try db.execute(sql: "INSERT INTO depot_layouts(entity, fields) VALUES (?, ?)", arguments: [entity.name, fields])
        return db.lastInsertedRowID
    }

    private struct WriterKey: Hashable {
        var entity: String
        var columns: [String]
        var policy: ConflictPolicy
        var deferReferences: Bool
    }
}
