import DepotWire
import GRDB
import GRDBSQLite

/// Writes the rows of batches of one entity, one column set and one policy.
///
/// This is the import's hot path, written against the SQLite C API on GRDB's
/// cached statements: per row, one indexed lookup of the stored record, then
/// an insert, an update of the provided fields, or nothing when every value
/// is equal (unchanged records are neither written nor logged).
final class RowWriter {
    /// Unowned: the save's context caches its writers, and a writer never
    /// outlives its save (a strong reference leaked both on every save).
    private unowned let context: SaveContext
    private let entity: EntitySchema
    private let columns: [String]
    /// The batch's columns on the entity, and the judgement of its rows.
    private let plan: BatchPlan
    /// The batch positions of the identifier's fields.
    private let identifierColumns: [Int]
    /// Required fields the batch does not provide.
    private let missingRequired: [String]
    /// For `replace`: for each entity field, its batch position or nil.
    private let fieldToColumn: [Int?]

    /// Whether changes carry values (`history = "values"`).
    private let keepsValues: Bool
    /// For each entity field, its JSON object key with the colon: `"name":`.
    private let fieldKeys: [String]
    /// The values' JSON of the current record, reused from record to record.
    private var oldBuffer: [UInt8] = []
    private var newBuffer: [UInt8] = []
    /// For each entity field, whether it is a `json` field (written raw).
    private let rawJSON: [Bool]
    /// The layout an insert's values follow (``SaveContext/layout(of:)``).
    private let layout: Int64?

    /// A to-one of the entity whose columns the batch gives: each record's
    /// reference must name a stored record of the target (DESIGN §12).
    private struct Reference {
        var name: String
        var target: String
        /// The batch positions of its columns, in the target's identifier order.
        var columns: [Int]
    }
    private let references: [Reference]

    private let lookupSQL: String
    private let insertSQL: String
    private let updateSQL: String?

    init(
        context: SaveContext, entity: EntitySchema, columns: [String], policy: ConflictPolicy,
        deferReferences: Bool = false
    ) throws {
        self.context = context
        self.entity = entity
        self.columns = columns
        let plan = try BatchPlan(entity: entity, columns: columns, policy: policy)
        self.plan = plan
        self.identifierColumns = plan.identifierColumns
        self.missingRequired = plan.missingRequired
        self.fieldToColumn = plan.fieldToColumn
        self.keepsValues = entity.history == .values
        self.fieldKeys = entity.fields.map { JSONText.quoted($0.name) + ":" }
        self.rawJSON = entity.fields.map { $0.type == .json }
        self.layout = keepsValues ? try context.layout(of: entity) : nil
        self.references =
            deferReferences
            ? []
            : entity.relationships.compactMap { r -> Reference? in
                guard r.isToOne, let names = entity.relationshipColumns[r.name] else { return nil }
                let positions = names.compactMap { columns.firstIndex(of: $0) }
                guard positions.count == names.count else { return nil }  // not given: not changed
                return Reference(name: r.name, target: r.target, columns: positions)
            }

        let table = entity.table
        lookupSQL =
            "SELECT rowid, " + entity.fields.map { SQL.quote($0.name) }.joined(separator: ", ")
            + " FROM \(table) WHERE " + entity.identifier.map { "\(SQL.quote($0)) = ?" }.joined(separator: " AND ")
        insertSQL =
            "INSERT INTO \(table) (" + columns.map(SQL.quote).joined(separator: ", ") + ", depot_token) VALUES ("
            + SQL.markers(columns.count + 1) + ") ON CONFLICT DO NOTHING"
        let updated = plan.updatedFields.map { entity.fields[$0].name }
        updateSQL =
            updated.isEmpty
            ? nil
            : "UPDATE \(table) SET " + updated.map { "\(SQL.quote($0)) = ?" }.joined(separator: ", ")
                + ", depot_token = ? WHERE rowid = ?"
    }

    /// Writes `batch`.
    ///
    /// Every row is counted as what it did, so that the counters agree with
    /// the history (DESIGN §3): `inserted`, `updated` and `unchanged` as
    /// logged; `duplicates` only for rows superseded by a later row of the
    /// same identifier in the batch, which are never written.
    ///
    /// - Parameter sourceRowidFloor: when given, the batch is part of one
    ///   source (an import's file) and every stored row with a greater rowid
    ///   was written from that source earlier (the `fail` policy names such
    ///   a record as appearing twice). Within the batch, under `upsert` and
    ///   `replace`, only the last record of an identifier is written, so
    ///   that a re-import of the same file changes nothing.
    func write(_ batch: RecordBatch, sourceRowidFloor: Int64? = nil) throws -> WriteCounts {
        let db = context.db
        let width = columns.count
        let superseded =
            sourceRowidFloor != nil && (plan.policy == .upsert || plan.policy == .replace)
            ? batch.values.withUnsafeBufferPointer { all in
                plan.supersededRows(batch) { r in plan.nullRefusal { all[r * width + $0] } != nil }
            } : nil
        let lookup = try db.cachedStatement(sql: lookupSQL).sqliteStatement
        let insert = try db.cachedStatement(sql: insertSQL).sqliteStatement
        let connection = db.sqliteConnection
        let update = try updateSQL.map { try db.cachedStatement(sql: $0).sqliteStatement }
        let finds = try references.map { try context.referenceStatement(to: $0.target) }
        // The token of the save's history transaction, on every record it
        // writes (the record's last change: its ETag, DESIGN §16).
        let token = try context.nextToken()
        sqlite3_bind_int64(insert, Int32(width + 1), token)
        var counts = WriteCounts()
        /// The entity positions of the fields a record changes.
        var changed: [Int] = []
        try batch.values.withUnsafeBufferPointer { all in
            rows: for r in 0..<batch.count {
                if let superseded, superseded[r] {
                    counts.duplicates += 1
                    continue rows
                }
                let row = UnsafeBufferPointer(rebasing: all[r * width..<(r + 1) * width])
                // Null identifier or required field: refuse the record.
                if let refusal = plan.nullRefusal({ row[$0] }) {
                    counts.count(refusal, row: r)
                    continue rows
                }
                // A reference names a stored record of its target, or nothing
                // (null): one probe of the target's identifier index.
                for (k, reference) in references.enumerated()
                where !reference.columns.contains(where: { row[$0].isNull }) {
                    let find = finds[k]
                    for (i, c) in reference.columns.enumerated() { SQL.bind(row[c], to: find, at: Int32(i + 1)) }
                    let found = try SQL.step(find, db)
                    sqlite3_reset(find)
                    if !found {
                        counts.reject(
                            Rejection(
                                row: r, field: reference.name,
                                reason: SaveContext.missing(reference.target, reference.columns.map { row[$0] })))
                        continue rows
                    }
                }
                // A new record most often: try the insert first, which probes
                // the identifier's index once; only a conflict needs the lookup.
                if missingRequired.isEmpty {
                    for c in 0..<width { SQL.bind(row[c], to: insert, at: Int32(c + 1)) }
                    try SQL.step(insert, db)
                    sqlite3_reset(insert)
                    if sqlite3_changes(connection) == 1 {
                        if keepsValues {
                            array(0..<fieldKeys.count, into: &newBuffer) { fieldToColumn[$0].map { row[$0] } ?? .null }
                        }
                        try context.logChange(
                            entity: entity.name, identifier: identifierJSON(row), kind: .insert,
                            oldBytes: nil, newBytes: keepsValues ? newBuffer : nil, layout: layout)
                        counts.count(.insert, row: r)
                        continue rows
                    }
                }
                for (k, c) in identifierColumns.enumerated() {
                    SQL.bind(row[c], to: lookup, at: Int32(k + 1))
                }
                defer { sqlite3_reset(lookup) }
                guard try SQL.step(lookup, db) else {
                    // Not stored. With every required field given, the insert
                    // above ran and met a conflict, so the record must exist.
                    guard !missingRequired.isEmpty else {
                        throw DepotError(
                            .database,
                            "record \(identifierJSON(row)) of \(JSONText.quoted(entity.name)) "
                                + "conflicts with a stored record that its identifier does not find")
                    }
                    counts.count(plan.judgeNew(), row: r)
                    continue rows
                }
                let rowid = sqlite3_column_int64(lookup, 0)
                let verdict = try plan.judgeStored(
                    { row[$0] }, equalsStored: { SQL.columnEquals(lookup, Int32($0 + 1), $1) }, changed: &changed,
                    identifier: identifierJSON(row), twice: sourceRowidFloor.map { rowid > $0 } ?? false)
                guard verdict == .update else {
                    counts.count(verdict, row: r)
                    continue rows
                }
                // The old values come from the lookup, read before its reset.
                if keepsValues {
                    array(changed, into: &oldBuffer) { SQL.column(lookup, Int32($0 + 1), as: entity.fields[$0].type) }
                    array(changed, into: &newBuffer) { fieldToColumn[$0].map { row[$0] } ?? .null }
                }
                sqlite3_reset(lookup)
                guard let update else { continue rows }
                var index: Int32 = 1
                for f in plan.updatedFields {
                    SQL.bind(fieldToColumn[f].map { row[$0] } ?? .null, to: update, at: index)
                    index += 1
                }
                sqlite3_bind_int64(update, index, token)
                sqlite3_bind_int64(update, index + 1, rowid)
                try SQL.step(update, db)
                sqlite3_reset(update)
                var fieldsJSON = "["
                for (i, f) in changed.enumerated() {
                    if i > 0 { fieldsJSON.append(",") }
                    fieldsJSON.append(contentsOf: fieldKeys[f].dropLast())
                }
                fieldsJSON.append("]")
                try context.logChange(
                    entity: entity.name, identifier: identifierJSON(row), kind: .update,
                    fields: fieldsJSON, oldBytes: keepsValues ? oldBuffer : nil,
                    newBytes: keepsValues ? newBuffer : nil)
                counts.count(.update, row: r)
            }
        }
        return counts
    }

    /// Writes into `out` the JSON array of the values of the fields at
    /// `positions` (entity positions), in that order, each `value(position)`:
    /// compact values (system tables version 3), whose names the change's
    /// `fields` (an update) or `layout` (an insert) give.
    private func array(_ positions: some Sequence<Int>, into out: inout [UInt8], _ value: (Int) -> Value) {
        out.removeAll(keepingCapacity: true)
        out.append(0x5B)
        var first = true
        for f in positions {
            if !first { out.append(0x2C) }
            first = false
            JSONBytes.append(value(f), rawJSON: rawJSON[f], to: &out)
        }
        out.append(0x5D)
    }

    private func identifierJSON(_ row: UnsafeBufferPointer<Value>) -> String {
        var out = ""
        if identifierColumns.count == 1 {
            JSONText.append(row[identifierColumns[0]], to: &out)
            return out
        }
        out.append("[")
        for (i, c) in identifierColumns.enumerated() {
            if i > 0 { out.append(",") }
            JSONText.append(row[c], to: &out)
        }
        out.append("]")
        return out
    }
}
