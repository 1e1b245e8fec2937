public import DepotEngine
import DepotWire
import NIOCore

/// A batch made ready for a PostgreSQL store's save: everything about it
/// that does not depend on what the store holds, made without the server,
/// so that an import makes the next batch ready while the server writes
/// the last one (an import, ``Importer``).
///
/// That is: the rows refused before any lookup (a null identifier or
/// required field), the rounds (each identifier at most once a round; under
/// `supersede` the last row of an identifier, the others counted as
/// duplicates), and for each round the lines to COPY: the keys to look up,
/// each row as a new record of the entity's table, and each row's history
/// as a new record.
public struct PreparedBatch: Sendable {
    let batch: RecordBatch
    /// Nil for an empty batch, which writes nothing (and is not checked).
    let plan: BatchPlan?
    /// What is known before the lookup: rejections, duplicates.
    let counts: WriteCounts
    let rounds: [Round]
    /// The batch columns staged for the lookup: the identifier's, and
    /// those of the references checked.
    let keyColumns: [Int]
    /// The to-one references checked (not deferred, given in the batch):
    /// each with its batch columns.
    let checked: [(relationship: Relationship, positions: [Int])]
    /// Whether the keys go to the server as two arrays (the rows, the
    /// identifier's values as text) rather than staged by a COPY: for an
    /// identifier of one field of a type with equality, and no reference
    /// to check (which needs the staged columns).
    let keysAsArrays: Bool
    /// Set for an import's batch by ``guessNew(_:)``: the job's keys, and
    /// for each row of the first round whether the job may have written its
    /// key before. Only those rows are looked up; the others are taken for
    /// new records, which the COPY into the entity's table checks.
    private(set) var fresh: (keys: SourceKeys, maybeStored: [Bool])?

    /// The rows of one round and their lines.
    struct Round: Sendable {
        /// Batch rows, in order.
        var rows: [Int] = []
        /// COPY lines of the key stage: seq (the batch row), then
        /// ``PreparedBatch/keyColumns``; empty with ``PreparedBatch/keysAsArrays``.
        var keys = ByteBuffer()
        /// With ``PreparedBatch/keysAsArrays``: each row's identifier value
        /// as PostgreSQL's text of it.
        var keyTexts: [String] = []
        /// COPY lines into the entity's table, one a row of ``rows``.
        var lines = Lines()
        /// For each row, its identifier's JSON as COPY text, for its
        /// history as a new record.
        var identifiers = Lines()
        /// For each row, its values as a compact array (every field's value
        /// in the entity's order) as COPY text, for its history as a new
        /// record; empty when the entity keeps no values.
        var values = Lines()
        /// The rows (by their place in ``rows``) whose identifier or values
        /// hold a line break (a field of type json can), which cannot share
        /// a history row with others (PostgresSaveContext): empty for an
        /// entity without a json field.
        var alone: Set<Int> = []
    }

    /// Lines one after the other in a buffer; the k-th ends at `end[k]`.
    struct Lines: Sendable {
        var buffer = ByteBuffer()
        var end: [Int] = []
        func start(_ k: Int) -> Int { k == 0 ? 0 : end[k - 1] }
        func line(_ k: Int) -> ByteBuffer { buffer.getSlice(at: start(k), length: end[k] - start(k))! }
        mutating func endLine() { end.append(buffer.writerIndex) }
    }

    init(empty batch: RecordBatch) {
        self.batch = batch
        plan = nil
        counts = WriteCounts()
        rounds = []
        keyColumns = []
        checked = []
        keysAsArrays = false
    }

    init(
        _ batch: RecordBatch, plan: BatchPlan, supersede: Bool,
        checked: [(relationship: Relationship, positions: [Int])]
    ) {
        self.batch = batch
        self.plan = plan
        self.checked = checked
        keyColumns = Array(Set(plan.identifierColumns + checked.flatMap(\.positions))).sorted()
        keysAsArrays =
            checked.isEmpty && plan.identifierColumns.count == 1
            && plan.columnFields[plan.identifierColumns[0]].type != .json
        var counts = WriteCounts()
        let width = batch.columns.count
        // Rows refused before any lookup, as an SQLite store refuses them.
        var live: [Int] = []
        live.reserveCapacity(batch.count)
        for r in 0..<batch.count {
            if let refusal = plan.nullRefusal({ batch.values[r * width + $0] }) {
                counts.count(refusal, row: r)
            } else {
                live.append(r)
            }
        }
        // Rounds: each identifier at most once in a round, in the batch's order.
        var rounds: [[Int]] = []
        func key(_ r: Int) -> [Value] { plan.identifier(of: batch, row: r) }
        if supersede {
            var refused = [Bool](repeating: true, count: batch.count)
            for r in live { refused[r] = false }
            let superseded = plan.supersededRows(batch) { refused[$0] }
            var kept: [Int] = []
            kept.reserveCapacity(live.count)
            for r in live {
                if superseded[r] { counts.duplicates += 1 } else { kept.append(r) }
            }
            rounds = [kept]
        } else {
            var seen: [[Value]: Int] = [:]
            for r in live {
                let key = key(r)
                let round = seen[key, default: 0]
                seen[key] = round + 1
                if round == rounds.count { rounds.append([]) }
                rounds[round].append(r)
            }
        }
        self.counts = counts
        let (keyColumns, keysAsArrays) = (keyColumns, keysAsArrays)
        self.rounds = rounds.map {
            Self.round($0, of: batch, plan: plan, keyColumns: keyColumns, keysAsArrays: keysAsArrays)
        }
    }

    private static func round(
        _ rows: [Int], of batch: RecordBatch, plan: BatchPlan, keyColumns: [Int],
        keysAsArrays: Bool
    ) -> Round {
        let width = batch.columns.count
        let entity = plan.entity
        var round = Round(rows: rows)
        if keysAsArrays {
            let c = plan.identifierColumns[0]
            round.keyTexts = rows.map { PostgresSQL.text(of: batch.values[$0 * width + c]) ?? "" }
        } else {
            appendKeys(rows, of: batch, columns: keyColumns, to: &round.keys)
        }
        round.lines.end.reserveCapacity(rows.count)
        round.identifiers.end.reserveCapacity(rows.count)
        if plan.keepsValues { round.values.end.reserveCapacity(rows.count) }
        let json = entity.fields.contains { $0.type == .json }
        var bytes: [UInt8] = []
        for (k, r) in rows.enumerated() {
            let base = r * width
            for c in 0..<width {
                if c > 0 { round.lines.buffer.writeInteger(UInt8(ascii: "\t")) }
                PostgresSQL.appendCopyField(batch.values[base + c], to: &round.lines.buffer)
            }
            round.lines.buffer.writeInteger(UInt8(ascii: "\n"))
            round.lines.endLine()

            let identifier = plan.identifierJSON(batch, row: r)
            PostgresSQL.appendCopyField(.string(identifier), to: &round.identifiers.buffer)
            round.identifiers.endLine()
            if json, identifier.utf8.contains(UInt8(ascii: "\n")) { round.alone.insert(k) }
            if plan.keepsValues {
                // Compact values: an array of every field's value in the
                // entity's order, read back under the entity's layout.
                bytes.removeAll(keepingCapacity: true)
                bytes.append(UInt8(ascii: "["))
                for f in entity.fields.indices {
                    if f > 0 { bytes.append(UInt8(ascii: ",")) }
                    JSONBytes.append(
                        plan.fieldToColumn[f].map { batch.values[base + $0] } ?? .null,
                        rawJSON: entity.fields[f].type == .json, to: &bytes)
                }
                bytes.append(UInt8(ascii: "]"))
                bytes.withUnsafeBytes { PostgresSQL.appendCopyText($0, to: &round.values.buffer) }
                round.values.endLine()
                if json, bytes.contains(UInt8(ascii: "\n")) { round.alone.insert(k) }
            }
        }
        return round
    }

    /// Marks which rows of the first round an import job may have written
    /// before (its `keys`), the rest to be taken for new records; adds the
    /// batch's keys to `keys`. Nothing for keys staged by a COPY, once the
    /// job met a stored record where it guessed a new one, or for a batch
    /// without some required field (a new record of it is refused, not
    /// copied, so that the COPY could not tell a wrong guess).
    mutating func guessNew(_ keys: SourceKeys) {
        guard keysAsArrays, plan?.missingRequired.isEmpty == true, let first = rounds.first, !keys.conflicted else {
            return
        }
        fresh = (keys, keys.check(first.keyTexts))
    }

    /// Appends the COPY lines of `rows`: each its row as `seq`, then its `columns`.
    static func appendKeys(_ rows: [Int], of batch: RecordBatch, columns: [Int], to out: inout ByteBuffer) {
        let width = batch.columns.count
        for r in rows {
            out.writeString(String(r))
            for c in columns {
                out.writeInteger(UInt8(ascii: "\t"))
                PostgresSQL.appendCopyField(batch.values[r * width + c], to: &out)
            }
            out.writeInteger(UInt8(ascii: "\n"))
        }
    }
}

extension PostgresStore {
    /// Makes `batch` ready for a save's ``PostgresSaveContext/write(_:)``,
    /// without the server: any thread, any time before the save.
    ///
    /// - Throws: ``DepotError/Code/unknownEntity`` or
    ///   ``DepotError/Code/unknownField`` for a batch that does not fit the schema.
    public nonisolated func prepare(_ batch: RecordBatch, _ options: BatchOptions) throws -> PreparedBatch {
        var prepared = try prepare(batch, options, supersede: options.supersedes)
        // An import's keys: the rows whose key it never gave are taken for
        // new records without a lookup (SourceKeys). Its batches are made
        // ready one after the other, so each sees the keys of those before.
        if let source = options.source { prepared.guessNew(source.keys) }
        return prepared
    }

    /// `batch` made ready, every row to be looked up.
    nonisolated func prepare(_ batch: RecordBatch, _ options: BatchOptions, supersede: Bool) throws -> PreparedBatch {
        guard !batch.isEmpty else { return PreparedBatch(empty: batch) }
        let entity = try entity(batch.entity)
        let plan = try BatchPlan(entity: entity, columns: batch.columns, policy: options.policy)
        var checked: [(relationship: Relationship, positions: [Int])] = []
        for r in entity.relationships where r.isToOne && !options.deferReferences {
            guard let names = entity.relationshipColumns[r.name], (try? self.entity(r.target)) != nil else { continue }
            let positions = names.compactMap { batch.columns.firstIndex(of: $0) }
            guard positions.count == names.count else { continue }  // not given: not changed
            checked.append((r, positions))
        }
        return PreparedBatch(batch, plan: plan, supersede: supersede, checked: checked)
    }
}
