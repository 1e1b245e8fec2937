public import DepotEngine
import Foundation
import NIOCore
import PostgresNIO

/// The writes of one save of a ``PostgresStore``: one PostgreSQL
/// transaction with its history.
///
/// A batch is written in bulk, not a statement a row: its rows are copied
/// (`COPY … FROM STDIN`) into a temporary staging table, the stored records
/// they name are read in one join, each row is judged as an SQLite store's
/// writer judges it (insert, update of the changed fields, unchanged, skip,
/// conflict, rejection), and then one `INSERT … SELECT` and one
/// `UPDATE … FROM` apply the batch and one `COPY` logs its history. The
/// counters, the rejections' reasons and the history's text are the same
/// as an SQLite store's for the same batches (StoreContractTests checks it).
// @unchecked: used inside one transaction by the task that runs it; Sendable to reach the save's body.
public final class PostgresSaveContext: WriteContext, @unchecked Sendable {
    // Used by one task at a time: the save's body, then the store.
    let store: PostgresStore
    /// The save's connection, in its transaction; none once the save ended
    /// (a context kept past its save must not write outside it, on a
    /// connection back in the pool).
    var connection: PostgresConnection {
        get throws {
            guard let pinned else {
                throw DepotError(
                    .database,
                    "the save's transaction is over (it ended); nothing of this write was kept")
            }
            return pinned
        }
    }
    private var pinned: PostgresConnection?
    private(set) var author: String
    let job: String?
    private(set) var transactionID: Int64?
    /// The last history transaction of this database transaction, of any of
    /// the saves it holds (a group commit's): the token the commit announces.
    private(set) var lastTransactionID: Int64?
    /// The changes logged so far in this save: the place of the last.
    private var changes: Int64 = 0
    /// Staging tables made on this connection in this save, by entity and columns.
    private var stages: [String: String] = [:]
    /// The changes of batch deletes and updates not yet copied into
    /// `depot_changes` (``flushChanges()``).
    var pendingChanges = ByteBuffer()

    init(store: PostgresStore, connection: PostgresConnection, author: String, job: String?) {
        self.store = store
        self.pinned = connection
        self.author = author
        self.job = job
    }

    /// Writes a batch of records under a conflict policy.
    ///
    /// - Parameter supersede: as for an import (an SQLite store's
    ///   `sourceRowidFloor`): of the rows of one identifier in the batch only
    ///   the last is written, the others are counted as
    ///   ``WriteCounts/duplicates``. Without it the rows are written in
    ///   order, so that a second row of an identifier updates the first.
    /// - Returns: what happened to the records, with the rows refused and why.
    /// - Throws: ``DepotError/Code/conflict`` under ``ConflictPolicy/fail``
    ///   when a record exists (the whole save rolls back);
    ///   ``DepotError/Code/unknownEntity`` or ``DepotError/Code/unknownField``
    ///   for a batch that does not fit the schema.
    /// - Parameter deferReferences: keep references to records that do not
    ///   exist yet (an import with `references = "defer"`), as an SQLite store does.
    public func write(
        _ batch: RecordBatch, policy: ConflictPolicy, supersede: Bool = false,
        deferReferences: Bool = false
    ) async throws -> WriteCounts {
        try await write(
            store.prepare(batch, BatchOptions(policy: policy, deferReferences: deferReferences), supersede: supersede))
    }

    /// Writes a batch made ready by ``PostgresStore/prepare(_:policy:supersede:deferReferences:)``,
    /// as ``write(_:policy:supersede:deferReferences:)`` writes it.
    public func write(_ prepared: PreparedBatch) async throws -> WriteCounts {
        guard let plan = prepared.plan else { return WriteCounts() }
        var counts = prepared.counts
        for (n, round) in prepared.rounds.enumerated() where !round.rows.isEmpty {
            if n == 0, let fresh = prepared.fresh, !fresh.keys.conflicted, guesses < Self.maxGuesses {
                // Only the rows the job may have written are looked up
                // (SourceKeys); if a stored record fails the COPY of the rest,
                // the round is done again with every row looked up.
                guesses += 1
                let before = (counts, changes)
                do {
                    try await write(round, of: prepared, plan: plan, counts: &counts, maybeStored: fresh.maybeStored)
                    continue
                } catch is GuessedWrong {
                    fresh.keys.markConflicted()
                    (counts, changes) = before
                }
            }
            try await write(round, of: prepared, plan: plan, counts: &counts, maybeStored: nil)
        }
        counts.sortRejections()
        return counts
    }

    /// The most rounds of a save written on a guess, each under a
    /// savepoint: a transaction with more than 64 subtransactions slows
    /// every snapshot of other sessions (PostgreSQL's cache of them
    /// overflows), so later rounds of a very long save look up every row.
    static let maxGuesses = 32

    /// The rounds of this save written on a guess so far.
    var guesses = 0

    /// A COPY of records guessed new met a stored one (and was rolled back).
    private struct GuessedWrong: Error {}

    /// Writes one round of a batch: its rows, each identifier at most once.
    ///
    /// The server takes the rows' keys first (two arrays for an identifier
    /// of one field, else a COPY into a small staging table: the
    /// identifier, and the references it checks), reads back the stored
    /// records they name, and the rows are judged here; the new
    /// records are then copied straight into the entity's table, from the
    /// lines made ready with the batch, the updates staged whole and applied
    /// by one `UPDATE … FROM`, and the history copied.
    ///
    /// With `maybeStored` (an import's guess, for each of the round's rows),
    /// only the rows marked are looked up, the others taken for new records
    /// and copied under a savepoint; a unique violation there rolls back to
    /// it and throws ``GuessedWrong``, the round's history not yet written.
    private func write(
        _ round: PreparedBatch.Round, of prepared: PreparedBatch, plan: BatchPlan,
        counts: inout WriteCounts, maybeStored: [Bool]?
    ) async throws {
        let logger = store.logger
        let (batch, rows) = (prepared.batch, round.rows)
        let entity = plan.entity
        let width = batch.columns.count
        // The keys: two arrays, unnested by the lookup, or staged by a COPY.
        let keys: String
        var keyBinds = PostgresBindings()
        var lookedUp = true
        if prepared.keysAsArrays {
            let c = plan.identifierColumns[0]
            if let maybeStored {
                let marked = rows.indices.filter { maybeStored[$0] }
                keyBinds.append(marked.map { Int64(rows[$0]) })
                keyBinds.append(marked.map { round.keyTexts[$0] })
                lookedUp = !marked.isEmpty
            } else {
                keyBinds.append(rows.map(Int64.init))
                keyBinds.append(round.keyTexts)
            }
            keys = "unnest($1::bigint[], $2::text[]::\(PostgresSQL.type(plan.columnFields[c].type))[])"
        } else {
            keys = try await stageTable(for: plan, columns: prepared.keyColumns)
            try await PostgresSQL.execute(connection, "TRUNCATE \(keys)", logger: logger)
            try await PostgresSQL.copy(
                connection, into: String(keys.dropFirst().dropLast()),
                columns: ["seq"] + prepared.keyColumns.map { "c\($0)" }, logger: logger
            ) { writer in
                try await writer.write(round.keys)
            }
        }
        // A reference names a stored record of its target, or nothing
        // (null), as an SQLite store checks it: refused rows, by relationship.
        var refused: [Int: Rejection] = [:]
        for check in prepared.checked {
            let (r, positions) = (check.relationship, check.positions)
            let target = try store.entity(r.target)
            let given = positions.map { "s.c\($0) IS NOT NULL" }.joined(separator: " AND ")
            let link = zip(target.identifier, positions).map { "t.\(PostgresSQL.quote($0)) = s.c\($1)" }
                .joined(separator: " AND ")
            // OFFSET 0: a probe of the target's key per row (see the lookup below).
            var sql =
                "SELECT s.seq::text FROM \(keys) s WHERE \(given) AND NOT EXISTS "
                + "(SELECT 1 FROM \(store.table(target.name)) t WHERE \(link) OFFSET 0)"
            if target.name == entity.name {
                // An SQLite store writes a batch row by row: a reference to
                // a record earlier in the batch finds it.
                sql +=
                    " AND NOT EXISTS (SELECT 1 FROM \(keys) e WHERE e.seq < s.seq AND "
                    + zip(plan.identifierColumns, positions).map { "e.c\($0) = s.c\($1)" }.joined(separator: " AND ")
                    + ")"
            }
            for row in try await PostgresSQL.textRows(connection, sql, logger: logger) {
                guard let seq = row[0].flatMap({ Int($0) }), refused[seq] == nil else { continue }
                let values = positions.map { batch.values[seq * width + $0] }
                refused[seq] = Rejection(row: seq, field: r.name, reason: SaveContext.missing(target.name, values))
            }
        }
        // The stored records the rows name, with every field as text: a
        // probe of the key per staged row, in the batch's order (sorted runs
        // make it a sweep of the index). OFFSET 0 keeps the planner from
        // flattening the subquery into a join, which it would make by
        // hashing the whole entity table (a scan that grows with the store)
        // for want of statistics on the staging table; analysing it instead
        // cost more than the lookup itself.
        let join = entity.identifier.enumerated().map { k, name in
            "t.\(PostgresSQL.quote(name)) = s.c\(plan.identifierColumns[k])"
        }.joined(separator: " AND ")
        let source = prepared.keysAsArrays ? "\(keys) AS s(seq, c\(plan.identifierColumns[0]))" : "\(keys) s"
        let lookup =
            "SELECT s.seq::text, "
            + entity.fields.map { PostgresSQL.selectText($0, table: "t") }.joined(separator: ", ")
            + " FROM \(source) CROSS JOIN LATERAL (SELECT * FROM \(store.table(entity.name)) t WHERE \(join) OFFSET 0) t"
        var stored: [Int: [Value]] = [:]
        for row in lookedUp ? try await PostgresSQL.textRows(connection, lookup, keyBinds, logger: logger) : [] {
            guard let seq = row[0].flatMap({ Int($0) }) else { continue }
            stored[seq] = zip(entity.fields, row.dropFirst()).map { PostgresSQL.value($1, as: $0.type) }
        }
        // Each row judged in order, as an SQLite store's writer judges it.
        var inserts: [Int] = []
        var updates: [Int] = []
        var logs: [Logged] = []
        for (k, r) in rows.enumerated() {
            if let rejection = refused[r] {
                counts.reject(rejection)
                continue
            }
            guard let old = stored[r] else {
                let verdict = plan.judgeNew()
                counts.count(verdict, row: r)
                if verdict == .insert {
                    inserts.append(k)
                    logs.append(.insert(k))
                }
                continue
            }
            let row = batch.values[(r * width)..<((r + 1) * width)]
            var changed: [Int] = []
            let verdict = try plan.judgeStored(
                { row[row.startIndex + $0] }, equalsStored: { Value.storedEqual(old[$0], $1) }, changed: &changed,
                identifier: plan.identifierJSON(batch, row: r))
            counts.count(verdict, row: r)
            if verdict == .update {
                updates.append(r)
                logs.append(.update(row: r, changed: changed, old: old))
            }
        }
        // The history's rows are made on another thread while the server
        // takes the records: new records from the texts made with the
        // batch, in runs of up to ``insertRun`` consecutive changes a row
        // (``appendInserts``), an update a row of its own.
        var history: Task<ByteBuffer, Never>?
        if !logs.isEmpty {
            let txn = try await historyTransaction()
            let first = changes + 1
            changes += Int64(logs.count)
            let layout = plan.keepsValues ? String(try store.layout(of: entity)) : nil
            // Detached: the history's COPY text is built while the batch is written; the save awaits it.
            history = Task.detached {
                var out = ByteBuffer()
                var run: [Int] = []
                var runStart = first
                for (n, log) in logs.enumerated() {
                    switch log {
                    case .insert(let k):
                        if run.isEmpty { runStart = first + Int64(n) }
                        if round.alone.contains(k) {
                            Self.appendInserts(
                                run, of: round, to: &out, txn: txn, id: runStart, entity: entity.name, layout: layout)
                            Self.appendInserts(
                                [k], of: round, to: &out, txn: txn, id: first + Int64(n), entity: entity.name,
                                layout: layout)
                            run.removeAll(keepingCapacity: true)
                            continue
                        }
                        run.append(k)
                        if run.count == Self.insertRun {
                            Self.appendInserts(
                                run, of: round, to: &out, txn: txn, id: runStart, entity: entity.name, layout: layout)
                            run.removeAll(keepingCapacity: true)
                        }
                    case .update(let r, let changed, let old):
                        Self.appendInserts(
                            run, of: round, to: &out, txn: txn, id: runStart, entity: entity.name, layout: layout)
                        run.removeAll(keepingCapacity: true)
                        let row = batch.values[(r * width)..<((r + 1) * width)]
                        func given(_ f: Int) -> Value {
                            plan.fieldToColumn[f].map { row[row.startIndex + $0] } ?? .null
                        }
                        let fields =
                            "[" + changed.map { JSONText.quoted(entity.fields[$0].name) }.joined(separator: ",") + "]"
                        Self.appendChange(
                            &out, txn: txn, id: first + Int64(n), entity: entity.name,
                            identifier: plan.identifierJSON(batch, row: r), kind: .update, fields: fields,
                            old: plan.keepsValues ? plan.object(changed) { old[$0] } : nil,
                            new: plan.keepsValues ? plan.object(changed, given) : nil)
                    }
                }
                Self.appendInserts(
                    run, of: round, to: &out, txn: txn, id: runStart, entity: entity.name, layout: layout)
                return out
            }
        }
        if !inserts.isEmpty {
            // The new records, copied into the entity's table in the rows'
            // order, their lines as made with the batch, in runs.
            let lines = round.lines
            let copy = { [connection = try connection, inserts] in
                try await PostgresSQL.copy(
                    connection, into: PostgresSQL.copyName(entity.name),
                    columns: batch.columns.map(PostgresSQL.copyName), logger: logger
                ) { writer in
                    var i = 0
                    while i < inserts.count {
                        var j = i + 1
                        while j < inserts.count, inserts[j] == inserts[j - 1] + 1,
                            lines.end[inserts[j]] - lines.start(inserts[i]) < 1 << 20
                        {
                            j += 1
                        }
                        let from = lines.start(inserts[i])
                        try await writer.write(
                            lines.buffer.getSlice(at: from, length: lines.end[inserts[j - 1]] - from)!)
                        i = j
                    }
                }
            }
            if maybeStored != nil {
                try await PostgresSQL.execute(connection, "SAVEPOINT depot_guess", logger: logger)
                do {
                    try await copy()
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
                    try await PostgresSQL.execute(connection, "ROLLBACK TO SAVEPOINT depot_guess", logger: logger)
                    history?.cancel()
                    throw GuessedWrong()
                }
                try await PostgresSQL.execute(connection, "RELEASE SAVEPOINT depot_guess", logger: logger)
            } else {
                try await copy()
            }
        }
        if !updates.isEmpty, !plan.updatedFields.isEmpty {
            // The updated rows staged whole (few, as a rule), then applied.
            let all = Array(0..<width)
            let stage = try await stageTable(for: plan, columns: all)
            try await PostgresSQL.execute(connection, "TRUNCATE \(stage)", logger: logger)
            var staged = ByteBuffer()
            PreparedBatch.appendKeys(updates, of: batch, columns: all, to: &staged)
            try await PostgresSQL.copy(
                connection, into: String(stage.dropFirst().dropLast()),
                columns: ["seq"] + all.map { "c\($0)" }, logger: logger
            ) { [staged] writer in
                try await writer.write(staged)
            }
            let set = plan.updatedFields.map { f in
                "\(PostgresSQL.quote(entity.fields[f].name)) = " + (plan.fieldToColumn[f].map { "s.c\($0)" } ?? "NULL")
            }.joined(separator: ", ")
            try await PostgresSQL.execute(
                connection,
                "UPDATE \(store.table(entity.name)) t SET \(set), depot_token = \(Self.tokenExpression) "
                    + "FROM \(stage) s WHERE \(join)", logger: logger)
        }
        if let history { try await copyChanges(await history.value) }
    }

    /// A change of a round's history, as judged: its line is made later.
    private enum Logged: Sendable {
        /// The round's k-th row, a new record.
        case insert(Int)
        /// The batch's row `row`, an update of the stored record `old` in
        /// the fields at entity positions `changed`.
        case update(row: Int, changed: [Int], old: [Value])
    }

    /// The most new records a row of `depot_changes` holds: a run of
    /// consecutive changes of one save, a row where each had one before.
    /// Of a 1M-row import's history, the COPY of a row a change took 3.1 s,
    /// that of runs 2.0 s (BENCHMARKS.md, "PostgreSQL").
    static let insertRun = 1024

    /// Appends the row of `depot_changes` that holds the new records
    /// `run` (their places in `round`), changes `id`, `id + 1`, … of
    /// history transaction `txn`: their identifiers one a line, their
    /// values one a line under `layout` (nil when the entity keeps none),
    /// and `span`, their number. Nothing for an empty run.
    static func appendInserts(
        _ run: [Int], of round: PreparedBatch.Round, to out: inout ByteBuffer, txn: Int64, id: Int64,
        entity: String, layout: String?
    ) {
        guard !run.isEmpty else { return }
        out.writeString("\(txn)\t\(id)\t")
        PostgresSQL.appendCopyField(.string(entity), to: &out)
        out.writeInteger(UInt8(ascii: "\t"))
        func texts(_ lines: PreparedBatch.Lines) {
            for (n, k) in run.enumerated() {
                if n > 0 { out.writeStaticString("\\n") }  // COPY's escape of a line break
                var text = lines.line(k)
                out.writeBuffer(&text)
            }
        }
        texts(round.identifiers)
        out.writeStaticString("\tinsert\t\\N\t\\N\t\\N\t")
        if let layout {
            texts(round.values)
            out.writeString("\t\(layout)\t\(run.count)\n")
        } else {
            out.writeString("\\N\t\\N\t\(run.count)\n")
        }
    }

    /// Copies rows made by ``logChange(_:entity:identifier:kind:fields:tombstone:old:new:)``
    /// and ``appendInserts(_:of:to:txn:id:entity:layout:)`` into the store's
    /// own `depot_changes` (the save set search_path to its schema).
    func copyChanges(_ changes: ByteBuffer) async throws {
        try await PostgresSQL.copy(
            connection, into: "depot_changes",
            columns: [
                "txn", "id", "entity", "identifier", "kind",
                "fields", "tombstone", "old", "new", "layout", "span"
            ], logger: store.logger
        ) { writer in
            try await writer.write(changes)
        }
    }

    /// Appends one change of `entity` to `out`, rows of a COPY into
    /// `depot_changes`, in this save's history transaction (created on the
    /// first change).
    func logChange(
        _ out: inout ByteBuffer, entity: String, identifier: String, kind: ChangeKind, fields: String?,
        tombstone: String? = nil, old: String?, new: String?
    ) async throws {
        let txn = try await historyTransaction()
        changes += 1
        Self.appendChange(
            &out, txn: txn, id: changes, entity: entity, identifier: identifier, kind: kind, fields: fields,
            tombstone: tombstone, old: old, new: new)
    }

    /// Appends the row of change `id` of history transaction `txn` to
    /// `out`, a row of a COPY into `depot_changes` (``copyChanges(_:)``);
    /// values as objects, under no layout, a change to the row.
    static func appendChange(
        _ out: inout ByteBuffer, txn: Int64, id: Int64, entity: String, identifier: String,
        kind: ChangeKind, fields: String?, tombstone: String? = nil, old: String?, new: String?
    ) {
        out.writeString(String(txn))
        out.writeInteger(UInt8(ascii: "\t"))
        out.writeString(String(id))
        for value in [
            Value.string(entity), .string(identifier),
            .string(kind.rawValue), fields.map(Value.string) ?? .null, tombstone.map(Value.string) ?? .null,
            old.map(Value.string) ?? .null, new.map(Value.string) ?? .null
        ] {
            out.writeInteger(UInt8(ascii: "\t"))
            PostgresSQL.appendCopyField(value, to: &out)
        }
        out.writeStaticString("\t\\N\t\\N\n")
    }

    /// The id of this save's history transaction, created on the first change.
    func historyTransaction() async throws -> Int64 {
        if let transactionID { return transactionID }
        var binds = PostgresBindings()
        binds.append(Timestamp.now())
        binds.append(author)
        binds.append(job)
        // Its id is also, for this transaction, the default token of the
        // records it writes (tokenExpression).
        let rows = try await PostgresSQL.textRows(
            connection,
            "WITH t AS (INSERT INTO \(store.table("depot_transactions"))"
                + "(timestamp, author, job) VALUES ($1, $2, $3) RETURNING id) "
                + "SELECT id::text, set_config('depot.token', id::text, true) FROM t", binds, logger: store.logger)
        guard let id = PostgresSQL.scalar(rows).flatMap({ Int64($0) }) else {
            throw DepotError(.database, "the server did not return the new history transaction's id")
        }
        transactionID = id
        lastTransactionID = id
        return id
    }

    public func beginHistoryTransaction(author: String) async throws {
        try await flushChanges()
        transactionID = nil
        changes = 0
        self.author = author
    }

    public func withSavepoint<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await flushChanges()
        let mark = (author, transactionID, lastTransactionID, changes, stages, guesses)
        try await PostgresSQL.execute(connection, "SAVEPOINT depot_save", logger: store.logger)
        do {
            let value = try await body()
            try await flushChanges()
            try await PostgresSQL.execute(connection, "RELEASE SAVEPOINT depot_save", logger: store.logger)
            return value
        } catch {
            // The staging tables made since are dropped with the rollback.
            pendingChanges = ByteBuffer()
            (author, transactionID, lastTransactionID, changes, stages, guesses) = mark
            try await PostgresSQL.execute(connection, "ROLLBACK TO SAVEPOINT depot_save", logger: store.logger)
            throw error
        }
    }

    /// A staging table on this connection for `plan`'s entity and the
    /// batch columns `columns` (named c0, c1, … by their batch positions),
    /// after `seq`, the row: a temporary table, dropped at the end of the
    /// transaction.
    private func stageTable(for plan: BatchPlan, columns: [Int]) async throws -> String {
        let key =
            plan.entity.name + "\u{0}"
            + columns.map {
                "\($0)\u{0}" + plan.columns[$0] + "\u{0}" + plan.columnFields[$0].type.rawValue
            }.joined(separator: "\u{0}")
        if let name = stages[key] { return name }
        let name = PostgresSQL.quote("depot_stage_\(stages.count)")
        let definitions =
            ["seq integer NOT NULL"] + columns.map { "c\($0) \(PostgresSQL.type(plan.columnFields[$0].type))" }
        try await PostgresSQL.execute(
            connection,
            "CREATE TEMPORARY TABLE \(name) (\(definitions.joined(separator: ", "))) "
                + "ON COMMIT DROP", logger: store.logger)
        stages[key] = name
        return name
    }

    /// Called by the store when the save's body failed: the transaction
    /// rolls back, and the context writes no more.
    func end() { pinned = nil }

    /// Called by the store before it commits: every change is already in
    /// `depot_changes`; a save that changed anything announces its token on
    /// the store's channel, which every host's store hears when it commits.
    func finish() async throws {
        try await flushChanges()
        defer { pinned = nil }
        guard let transactionID = lastTransactionID else { return }
        store.signal.announce(transactionID)
        var binds = PostgresBindings()
        binds.append(store.channel)
        binds.append(String(transactionID))
        try await PostgresSQL.execute(connection, "SELECT pg_notify($1, $2)", binds, logger: store.logger)
    }
}
