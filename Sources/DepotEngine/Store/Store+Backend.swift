import GRDB

/// An SQLite store is one backend of the daemon's store contract.
extension Store: StoreBackend {
    /// A batch of an SQLite store is written as it comes: row by row on the
    /// write connection (``RowWriter``), nothing to make ready beforehand.
    public struct Prepared: Sendable {
        let batch: RecordBatch
        let options: BatchOptions
    }

    public nonisolated var settings: StoreSettings {
        StoreSettings(
            name: configuration.name, location: configuration.path,
            historyRetention: configuration.historyRetention, saveEvery: configuration.saveEvery,
            saveInterval: configuration.saveInterval, adaptiveSaves: configuration.adaptiveSaves,
            historyMaxRetention: configuration.historyMaxRetention, historyPruneStep: configuration.historyPruneStep,
            importBatches: .rows(Self.importBatch), schemaBox: box, dialect: .sqlite, demand: demand)
    }

    /// Records per batch of an import. In-file duplicates within one batch
    /// are written once (the last wins); farther apart, the earlier version
    /// is written first (see ``WriteCounts/duplicates``). Sorted runs
    /// (``ImportOptions/sortRun``) bring the repeats of a run together.
    static let importBatch = 2_048

    package nonisolated var reads: any StoreReading { reader }

    public nonisolated func prepare(_ batch: RecordBatch, _ options: BatchOptions) throws -> Prepared {
        Prepared(batch: batch, options: options)
    }

    /// Runs one save whose body is async: the body runs on the write
    /// connection's thread, in the save's transaction (``WriterPump``).
    public nonisolated func withSave<T: Sendable>(
        author: String, job: String?, _ body: @Sendable (SQLiteWriteContext) async throws -> T
    ) async throws -> SaveOutcome<T> {
        let (value, transaction) = try await transact(author: author, job: job) { pump in
            try await body(SQLiteWriteContext(pump: pump))
        }
        if let transaction { signal.bump(token: transaction) }
        return SaveOutcome(value: value, token: transaction.map(HistoryToken.init))
    }

    package nonisolated func withHistory<T: Sendable>(_ body: @Sendable (SQLiteWriteContext) async throws -> T)
        async throws -> T
    {
        try await transact(author: "", job: nil) { pump in try await body(SQLiteWriteContext(pump: pump)) }.0
    }

    /// Runs `body` with the write connection's thread lent to it, in one
    /// transaction, which commits when `body` returns and rolls back when
    /// it throws.
    ///
    /// - Returns: `body`'s result and the id of the history transaction its
    ///   changes made, if any.
    private nonisolated func transact<T: Sendable>(
        author: String, job: String?, _ body: @Sendable (WriterPump) async throws -> T
    ) async throws -> (T, Int64?) {
        let pump = WriterPump()
        try await checkOpen()
        // A job's save first settles the WAL its last one left (WALCheckpointer).
        if job != nil, let checkpointer { try await checkpointer.settle(pool) }
        let schema = self.schema
        async let committed = { () async throws -> Int64? in
            defer { pump.close() }
            return try await pool.write { db in
                let context = SaveContext(db: db, store: schema, author: author, job: job)
                try pump.serve(context)
                try context.flushChanges()
                return context.lastTransactionID
            }
        }()
        let value: T
        do {
            value = try await withTaskExecutorPreference(pump) { try await body(pump) }
        } catch {
            pump.end(error)
            do {
                _ = try await committed
            } catch let failure where WriterPump.isEnded(error) {
                // The transaction never served the body (it could not
                // begin, or the task was cancelled first): its failure is the cause.
                throw Store.translate(failure, store: name)
            } catch {}
            // SQLite's errors (a primitive's) become the store's; the body's own pass as they are.
            throw error is DatabaseError ? Store.translate(error, store: name) : error
        }
        pump.end(nil)
        do {
            return (value, try await committed)
        } catch {
            throw Store.translate(error, store: name)
        }
    }

    /// Throws ``DepotError/Code/storeClosed`` once the store is closed.
    func checkOpen() throws {
        guard !isClosed else { throw DepotError(.storeClosed, "store \(JSONText.quoted(name)) is closed") }
    }
}

/// The writes of one save of an SQLite store: its body runs on the write
/// connection's thread (``WriterPump``), so each is a plain call there.
public final class SQLiteWriteContext: WriteContext {
    let pump: WriterPump

    init(pump: WriterPump) { self.pump = pump }

    package func rows(_ statement: SQLStatement) async throws -> [[Value]] {
        try SQLiteSession.rows(pump.context().db, statement)
    }

    public func write(_ batch: Store.Prepared) async throws -> WriteCounts {
        try pump.context().write(
            batch.batch, policy: batch.options.policy, sourceRowidFloor: batch.options.source?.floor,
            deferReferences: batch.options.deferReferences)
    }

    public func records(_ selection: RowSelection, positions: [Int], after cursor: RowCursor, limit: Int)
        async throws -> (records: [StoredRecord<Int64>], cursor: RowCursor)
    {
        let after: Int64 = if case .rowid(let rowid) = cursor { rowid } else { 0 }
        let found = try pump.context().records(selection, positions: positions, after: after, limit: limit)
        return (found, found.last.map { .rowid($0.key) } ?? cursor)
    }

    public func remove(_ key: Int64, of entity: EntitySchema, returning positions: [Int]) async throws -> [Value]? {
        try pump.context().remove(key, of: entity, returning: positions)
    }

    public func bulkUpdate(
        _ selection: RowSelection, assignments: [(Int, Value)], computed: [Int], after cursor: RowCursor, limit: Int
    ) async throws -> (counts: WriteCounts, cursor: RowCursor, more: Bool)? {
        let after: Int64 = if case .rowid(let rowid) = cursor { rowid } else { 0 }
        guard
            let done = try pump.context().bulkUpdate(
                selection, assignments: assignments, computed: computed, after: after, limit: limit)
        else { return nil }
        return (done.counts, done.last.map(RowCursor.rowid) ?? cursor, done.more)
    }

    public func bulkSet(_ entity: EntitySchema, fields: [Int], rows: [[Value]]) async throws -> [Bool]? {
        try pump.context().bulkSet(entity, fields: fields, rows: rows)
    }

    public func bulkRevert(transaction: Int64, skip: Int, after: Int64?, limit: Int, newest: Int64) async throws
        -> (counts: WriteCounts, taken: Int, continues: Bool, last: Int64)?
    {
        try pump.context().bulkRevert(transaction: transaction, skip: skip, after: after, limit: limit, newest: newest)
    }

    public func historyToken(issue: Bool) async throws -> Int64? {
        issue ? try pump.context().nextToken() : try pump.context().transactionID
    }

    public func writeConverted(_ rows: [ConvertedRow<Int64>], plan: MigrationPlan) async throws {
        try pump.context().writeConverted(rows, plan: plan)
    }

    public func switchMigration(_ plan: MigrationPlan, retiring suffix: String) async throws -> [String] {
        try pump.context().switchMigration(plan, retiring: suffix)
    }

    public func beginHistoryTransaction(author: String) async throws {
        try pump.context().beginHistoryTransaction(author: author)
    }

    public func withSavepoint<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let mark = try pump.context().savepoint()
        do {
            let value = try await body()
            try pump.context().release()
            return value
        } catch {
            // A rollback that fails (SQLite rolled the whole transaction
            // back, on a full disk) fails the save and the group with it.
            try pump.context().rollback(to: mark)
            throw error
        }
    }

    public func log(_ change: HistoryChange) async throws {
        try pump.context().logChange(
            entity: change.entity, identifier: change.identifier, kind: change.kind,
            fields: change.fields.map(JSONText.array),
            tombstone: change.tombstone, old: change.old, new: change.new)
    }
}

extension StoreReader: StoreReading {
    public func resultFeed(_ descriptor: FetchDescriptor) throws -> ResultFeed {
        try ResultFeed(reader: self, descriptor)
    }
}
