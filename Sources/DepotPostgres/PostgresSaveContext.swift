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
/// as an SQLite store's for the same batches (DepotPostgresTests checks it).
public final class PostgresSaveContext: @unchecked Sendable {
    // Used by one task at a time: the save's body, then the store.
    let store: PostgresStore
    let connection: PostgresConnection
    let author: String
    let job: String?
    private(set) var transactionID: Int64?
    /// Staging tables made on this connection in this save, by entity and columns.
    private var stages: [String: String] = [:]
    /// The changes of batch deletes and updates not yet copied into
    /// `depot_changes` (``flushChanges()``).
    var pendingChanges = ByteBuffer()

    init(store: PostgresStore, connection: PostgresConnection, author: String, job: String?) {
        self.store = store
        self.connection = connection
        self.author = author
        self.job = job
    }

    /// Saves a job's checkpoint in this save's transaction.
    public func setCheckpoint(job: String, data: [UInt8]) async throws {
        var binds = PostgresBindings()
        binds.append(job)
        binds.append(Data(data).base64EncodedString())
        binds.append(Timestamp.now())
        try await PostgresSQL.execute(connection, "INSERT INTO \(store.table("depot_checkpoints"))(job, data, updated) "
            + "VALUES ($1, decode($2, 'base64'), $3) ON CONFLICT (job) DO UPDATE SET data = excluded.data, "
            + "updated = excluded.updated", binds, logger: store.logger)
    }

    /// Removes a job's checkpoint in this save's transaction.
    public func removeCheckpoint(job: String) async throws {
        var binds = PostgresBindings()
        binds.append(job)
        try await PostgresSQL.execute(connection, "DELETE FROM \(store.table("depot_checkpoints")) WHERE job = $1",
                                      binds, logger: store.logger)
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
    public func write(_ batch: RecordBatch, policy: ConflictPolicy, supersede: Bool = false,
                      deferReferences: Bool = false) async throws -> WriteCounts {
        guard !batch.isEmpty else { return WriteCounts() }
        let plan = try BatchPlan(entity: store.entity(batch.entity), columns: batch.columns, policy: policy)
        var counts = WriteCounts()
        let width = batch.columns.count
        // Rows refused before any lookup, as an SQLite store refuses them.
        var live: [Int] = []
        rows: for r in 0..<batch.count {
            let row = batch.values[(r * width)..<((r + 1) * width)]
            for c in 0..<width where row[row.startIndex + c].isNull && !plan.columnFields[c].isOptional {
                let what = plan.identifierColumns.contains(c) ? "identifier field" : "required field"
                counts.rejected.append(Rejection(row: r, field: batch.columns[c],
                                                 reason: "\(what) \(JSONText.quoted(batch.columns[c])) is null"))
                continue rows
            }
            live.append(r)
        }
        // Rounds: each identifier at most once in a round, in the batch's order.
        var rounds: [[Int]] = []
        if supersede {
            var last: [[Value]: Int] = [:]
            for r in live { last[plan.identifier(of: batch, row: r)] = r }
            var kept: [Int] = []
            for r in live {
                if last[plan.identifier(of: batch, row: r)] == r { kept.append(r) } else { counts.duplicates += 1 }
            }
            rounds = [kept]
        } else {
            var seen: [[Value]: Int] = [:]
            for r in live {
                let key = plan.identifier(of: batch, row: r)
                let round = seen[key, default: 0]
                seen[key] = round + 1
                if round == rounds.count { rounds.append([]) }
                rounds[round].append(r)
            }
        }
        for round in rounds where !round.isEmpty {
            try await write(round, of: batch, plan: plan, deferReferences: deferReferences, counts: &counts)
        }
        counts.rejected.sort { $0.row < $1.row }
        return counts
    }

    /// Writes the rows `rows` of `batch`, each identifier at most once.
    private func write(_ rows: [Int], of batch: RecordBatch, plan: BatchPlan, deferReferences: Bool,
                       counts: inout WriteCounts) async throws {
        let logger = store.logger
        let entity = plan.entity
        let width = batch.columns.count
        let stage = try await stageTable(for: plan)
        try await PostgresSQL.execute(connection, "TRUNCATE \(stage)", logger: logger)
        // COPY's text format: seq, then the batch's columns.
        let stageColumns = ["seq"] + (0..<width).map { "c\($0)" }
        try await connection.copyFrom(table: String(stage.dropFirst().dropLast()), columns: stageColumns, logger: logger) { writer in
            var buffer = ByteBuffer()
            for r in rows {
                buffer.writeString(String(r))
                for c in 0..<width {
                    buffer.writeInteger(UInt8(ascii: "\t"))
                    PostgresSQL.appendCopyField(batch.values[r * width + c], to: &buffer)
                }
                buffer.writeInteger(UInt8(ascii: "\n"))
                if buffer.readableBytes >= 1 << 20 {
                    try await writer.write(buffer)
                    buffer.clear()
                }
            }
            if buffer.readableBytes > 0 { try await writer.write(buffer) }
        }
        // While the server takes the batch (its COPY, the analysis, the
        // lookups), the history's text of each row as a new record is
        // made on another thread: most rows of an import are inserts.
        let (plan, rowsToPrepare) = (plan, rows)
        let prepared = Task.detached { () -> [(identifier: String, new: String?)] in
            rowsToPrepare.map { r in
                let base = r * width
                let new = plan.keepsValues
                    ? plan.object(entity.fields.indices) { f in plan.fieldToColumn[f].map { batch.values[base + $0] } ?? .null }
                    : nil
                return (plan.identifierJSON(batch, row: r), new)
            }
        }
        // A temporary table has no statistics until analysed: without them
        // the planner joins it to the whole entity table by hashing (a scan
        // that grows with the store) instead of probing its key per row.
        try await PostgresSQL.execute(connection, "ANALYZE \(stage)", logger: logger)
        // A reference names a stored record of its target, or nothing
        // (null), as an SQLite store checks it: refused rows, by relationship.
        var refused: [Int: Rejection] = [:]
        for r in entity.relationships where r.isToOne && !deferReferences {
            guard let names = entity.relationshipColumns[r.name], let target = try? store.entity(r.target) else { continue }
            let positions = names.compactMap { batch.columns.firstIndex(of: $0) }
            guard positions.count == names.count else { continue }  // not given: not changed
            let given = positions.map { "s.c\($0) IS NOT NULL" }.joined(separator: " AND ")
            let link = zip(target.identifier, positions).map { "t.\(PostgresSQL.quote($0)) = s.c\($1)" }
                .joined(separator: " AND ")
            var sql = "SELECT s.seq::text FROM \(stage) s WHERE \(given) AND NOT EXISTS "
                + "(SELECT 1 FROM \(store.table(target.name)) t WHERE \(link))"
            if target.name == entity.name {
                // An SQLite store writes a batch row by row: a reference to
                // a record earlier in the batch finds it.
                sql += " AND NOT EXISTS (SELECT 1 FROM \(stage) e WHERE e.seq < s.seq AND "
                    + zip(plan.identifierColumns, positions).map { "e.c\($0) = s.c\($1)" }.joined(separator: " AND ") + ")"
            }
            for row in try await PostgresSQL.textRows(connection, sql, logger: logger) {
                guard let seq = row[0].flatMap({ Int($0) }), refused[seq] == nil else { continue }
                let values = positions.map { batch.values[seq * width + $0] }
                refused[seq] = Rejection(row: seq, field: r.name, reason: SaveContext.missing(target.name, values))
            }
        }
        // The stored records the rows name, with every field as text.
        let join = entity.identifier.enumerated().map { k, name in
            "t.\(PostgresSQL.quote(name)) = s.c\(plan.identifierColumns[k])"
        }.joined(separator: " AND ")
        let lookup = "SELECT s.seq::text, " + entity.fields.map { PostgresSQL.selectText($0, table: "t") }.joined(separator: ", ")
            + " FROM \(stage) s JOIN \(store.table(entity.name)) t ON \(join)"
        var stored: [Int: [Value]] = [:]
        for row in try await PostgresSQL.textRows(connection, lookup, logger: logger) {
            guard let seq = row[0].flatMap({ Int($0) }) else { continue }
            stored[seq] = zip(entity.fields, row.dropFirst()).map { PostgresSQL.value($1, as: $0.type) }
        }
        // Each row judged in order, as an SQLite store's writer judges it.
        var inserts: [Int64] = []
        var updates: [Int64] = []
        var changes = ByteBuffer()
        var logged = 0
        let texts = await prepared.value
        for (k, r) in rows.enumerated() {
            let row = batch.values[(r * width)..<((r + 1) * width)]
            func given(_ f: Int) -> Value { plan.fieldToColumn[f].map { row[row.startIndex + $0] } ?? .null }
            if let rejection = refused[r] {
                counts.rejected.append(rejection)
                continue
            }
            guard let old = stored[r] else {
                if let field = plan.missingRequired.first {
                    counts.rejected.append(Rejection(row: r, field: field,
                        reason: "new record lacks required field \(JSONText.quoted(field))"))
                    continue
                }
                inserts.append(Int64(r))
                try await logChange(&changes, entity: entity.name, identifier: texts[k].identifier, kind: .insert,
                                    fields: nil, old: nil, new: texts[k].new)
                logged += 1
                counts.inserted += 1
                continue
            }
            var changed: [Int] = []
            switch plan.policy {
            case .skip:
                counts.skipped += 1
                continue
            case .fail:
                throw DepotError(.conflict, "record \(plan.identifierJSON(batch, row: r)) of \(JSONText.quoted(entity.name)) "
                    + "already exists and the conflict policy is fail; nothing of this save was kept")
            case .upsert:
                for c in plan.valueColumns {
                    let f = plan.columnPositions[c]
                    if !Self.equal(old[f], row[row.startIndex + c]) { changed.append(f) }
                }
            case .replace:
                if let field = plan.missingRequired.first {
                    counts.rejected.append(Rejection(row: r, field: field,
                        reason: "a replacing record lacks required field \(JSONText.quoted(field))"))
                    continue
                }
                for f in entity.fields.indices where !entity.identifierIndexes.contains(f) {
                    if !Self.equal(old[f], given(f)) { changed.append(f) }
                }
            }
            if changed.isEmpty {
                counts.unchanged += 1
                continue
            }
            updates.append(Int64(r))
            let fields = "[" + changed.map { JSONText.quoted(entity.fields[$0].name) }.joined(separator: ",") + "]"
            try await logChange(&changes, entity: entity.name, identifier: texts[k].identifier, kind: .update, fields: fields,
                                old: plan.keepsValues ? plan.object(changed) { old[$0] } : nil,
                                new: plan.keepsValues ? plan.object(changed, given) : nil)
            logged += 1
            counts.updated += 1
        }
        if !inserts.isEmpty {
            var binds = PostgresBindings()
            binds.append(inserts)
            try await PostgresSQL.execute(connection, "INSERT INTO \(store.table(entity.name))("
                + batch.columns.map(PostgresSQL.quote).joined(separator: ", ") + ") SELECT "
                + (0..<width).map { "c\($0)" }.joined(separator: ", ")
                + " FROM \(stage) JOIN unnest($1::bigint[]) AS chosen(seq) USING (seq) ORDER BY seq",
                binds, logger: logger)
        }
        if !updates.isEmpty, !plan.updatedFields.isEmpty {
            var binds = PostgresBindings()
            binds.append(updates)
            let set = plan.updatedFields.map { f in
                "\(PostgresSQL.quote(entity.fields[f].name)) = " + (plan.fieldToColumn[f].map { "s.c\($0)" } ?? "NULL")
            }.joined(separator: ", ")
            try await PostgresSQL.execute(connection, "UPDATE \(store.table(entity.name)) t SET \(set) "
                + "FROM \(stage) s JOIN unnest($1::bigint[]) AS chosen(seq) USING (seq) WHERE \(join)", binds, logger: logger)
        }
        if logged > 0 { try await copyChanges(changes) }
    }

    /// Copies rows made by ``logChange(_:entity:identifier:kind:fields:tombstone:old:new:)``
    /// into the store's own `depot_changes` (the save set search_path to its
    /// schema): ids follow the order of the rows, the order of the changes.
    func copyChanges(_ changes: ByteBuffer) async throws {
        try await connection.copyFrom(table: "depot_changes", columns: ["txn", "entity", "identifier", "kind",
                                      "fields", "tombstone", "old", "new"], logger: store.logger) { writer in
            try await writer.write(changes)
        }
    }

    /// Appends one change of `entity` to `out`, rows of a COPY into
    /// `depot_changes`, in this save's history transaction (created on the
    /// first change).
    func logChange(_ out: inout ByteBuffer, entity: String, identifier: String, kind: ChangeKind, fields: String?,
                   tombstone: String? = nil, old: String?, new: String?) async throws {
        let txn = try await historyTransaction()
        out.writeString(String(txn))
        for value in [Value.string(entity), .string(identifier),
                      .string(kind.rawValue), fields.map(Value.string) ?? .null, tombstone.map(Value.string) ?? .null,
                      old.map(Value.string) ?? .null, new.map(Value.string) ?? .null] {
            out.writeInteger(UInt8(ascii: "\t"))
            PostgresSQL.appendCopyField(value, to: &out)
        }
        out.writeInteger(UInt8(ascii: "\n"))
    }

    /// The id of this save's history transaction, created on the first change.
    func historyTransaction() async throws -> Int64 {
        if let transactionID { return transactionID }
        var binds = PostgresBindings()
        binds.append(Timestamp.now())
        binds.append(author)
        binds.append(job)
        let rows = try await PostgresSQL.textRows(connection, "INSERT INTO \(store.table("depot_transactions"))"
            + "(timestamp, author, job) VALUES ($1, $2, $3) RETURNING id::text", binds, logger: store.logger)
        guard let id = PostgresSQL.scalar(rows).flatMap({ Int64($0) }) else {
            throw DepotError(.database, "the server did not return the new history transaction's id")
        }
        transactionID = id
        return id
    }

    /// The staging table of `plan`'s entity and columns on this connection:
    /// a temporary table, dropped at the end of the transaction.
    private func stageTable(for plan: BatchPlan) async throws -> String {
        let key = plan.entity.name + "\u{0}" + plan.columns.joined(separator: "\u{0}")
        if let name = stages[key] { return name }
        let name = PostgresSQL.quote("depot_stage_\(stages.count)")
        let columns = ["seq integer NOT NULL"] + plan.columnFields.enumerated().map { c, field in
            "c\(c) \(PostgresSQL.type(field.type))"
        }
        try await PostgresSQL.execute(connection, "CREATE TEMPORARY TABLE \(name) (\(columns.joined(separator: ", "))) "
            + "ON COMMIT DROP", logger: store.logger)
        stages[key] = name
        return name
    }

    /// Called by the store before it commits: every change is already in
    /// `depot_changes`; a save that changed anything announces its token on
    /// the store's channel, which every host's store hears when it commits.
    func finish() async throws {
        guard let transactionID else { return }
        var binds = PostgresBindings()
        binds.append(store.channel)
        binds.append(String(transactionID))
        try await PostgresSQL.execute(connection, "SELECT pg_notify($1, $2)", binds, logger: store.logger)
    }

    /// Whether a stored value (read back as its field's type) equals a
    /// given one, as an SQLite store compares them.
    static func equal(_ stored: Value, _ given: Value) -> Bool {
        switch (stored, given) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.double(let a), .int(let b)): a == Double(b)
        case (.int(let a), .double(let b)): Double(a) == b
        case (.string(let a), .string(let b)): a == b
        default: false
        }
    }
}
