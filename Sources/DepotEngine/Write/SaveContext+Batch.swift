import GRDB
import GRDBSQLite

extension SaveContext {
    /// Deletes the records whose rowids `select` returns (at most `limit`),
    /// logging a tombstone for each, and every old value when the entity's
    /// history keeps values; then applies the delete rules of what refers
    /// to each (DESIGN §12).
    ///
    /// - Returns: how many rows `select` gave, and the counts of everything
    ///   deleted (cascades included) and updated (nullified references).
    func deleteRows(
        _ entity: EntitySchema, select: SQLFragment, limit: Int,
        cached: Bool = false
    ) throws -> (rows: Int, counts: WriteCounts) {
        let rowids = try fetchRowids(select, limit: limit, cached: cached)
        var counts = WriteCounts()
        let tombstoneFields =
            entity.identifierIndexes
            + entity.preserveIndexes.filter { !entity.identifierIndexes.contains($0) }
        let keepsValues = entity.history == .values
        let returning = keepsValues ? Array(entity.fields.indices) : tombstoneFields
        // The values are read before the delete, not with RETURNING: SQLite
        // 3.40's RETURNING gave an INTEGER column that follows a REAL one as
        // a float (a bool's false came back as 0.0; HistoryValuesOrderTests).
        let select = try db.cachedStatement(
            sql: "SELECT "
                + returning.map { SQL.quote(entity.fields[$0].name) }.joined(separator: ", ")
                + " FROM \(entity.table) WHERE rowid = ?"
        ).sqliteStatement
        let delete = try db.cachedStatement(sql: "DELETE FROM \(entity.table) WHERE rowid = ?").sqliteStatement
        let incoming = references(to: entity).map { ($0, $0.match) }
        for rowid in rowids {
            sqlite3_bind_int64(select, 1, rowid)
            guard try SQL.step(select, db) else { sqlite3_reset(select); continue }
            var values: [Int: Value] = [:]
            for (i, f) in returning.enumerated() {
                values[f] = SQL.column(select, Int32(i), as: entity.fields[f].type)
            }
            sqlite3_reset(select)
            sqlite3_bind_int64(delete, 1, rowid)
            try SQL.step(delete, db)
            sqlite3_reset(delete)
            counts.deleted += 1
            var identifier = ""
            let identifierValues = entity.identifierIndexes.map { values[$0]! }
            Identifier.appendJSON(identifierValues, to: &identifier)
            try logChange(
                entity: entity.name, identifier: identifier, kind: .delete,
                tombstone: Self.object(entity, tombstoneFields.map { ($0, values[$0]!) }),
                old: keepsValues ? Self.object(entity, returning.map { ($0, values[$0]!) }) : nil)
            // What refers to it: cascade, nullify or deny (DESIGN §12).
            if !incoming.isEmpty {
                try applyDeleteRules(
                    entity, incoming, identifier: identifierValues, identifierJSON: identifier,
                    counts: &counts)
            }
        }
        return (rowids.count, counts)
    }

    /// Sets `assignments` on the records matching `predicate` with a rowid
    /// above `after`, at most `limit` of them, in rowid order.
    ///
    /// - Returns: the counts, the last rowid visited, and whether more may follow.
    func updateRows(
        _ entity: EntitySchema, predicate: SQLFragment, assignments: [(Int, Value)],
        after: Int64, limit: Int
    ) throws -> (WriteCounts, Int64, Bool) {
        try checkReferences(entity, assignments: assignments)
        let idColumns = entity.identifierIndexes
        let selected = idColumns + assignments.map(\.0)
        let preparedSelect = try db.makeStatement(
            sql: "SELECT rowid, "
                + selected.map { SQL.quote(entity.fields[$0].name) }.joined(separator: ", ")
                + " FROM \(entity.table) WHERE rowid > ? AND \(predicate.sql) ORDER BY rowid LIMIT \(limit)")
        defer { withExtendedLifetime(preparedSelect) {} }
        let select = preparedSelect.sqliteStatement
        sqlite3_bind_int64(select, 1, after)
        for (i, v) in predicate.arguments.enumerated() { SQL.bind(v, to: select, at: Int32(i + 2)) }
        let keepsValues = entity.history == .values
        /// Rowid, identifier, changed fields, and the old and new values.
        var pending: [(Int64, String, [String], String?, String?)] = []
        var last = after
        var visited = 0
        var counts = WriteCounts()
        while try SQL.step(select, db) {
            visited += 1
            last = sqlite3_column_int64(select, 0)
            var changed: [String] = []
            var changedAssignments: [Int] = []
            for (k, (field, value)) in assignments.enumerated()
            where !SQL.columnEquals(select, Int32(1 + idColumns.count + k), value) {
                changed.append(entity.fields[field].name)
                changedAssignments.append(k)
            }
            if changed.isEmpty {
                counts.unchanged += 1
                continue
            }
            var identifier = ""
            Identifier.appendJSON(
                idColumns.indices.map {
                    SQL.column(select, Int32(1 + $0), as: entity.fields[idColumns[$0]].type)
                }, to: &identifier)
            var old: String? = nil
            var new: String? = nil
            if keepsValues {
                old = Self.object(
                    entity,
                    changedAssignments.map { k in
                        let field = assignments[k].0
                        return (
                            field, SQL.column(select, Int32(1 + idColumns.count + k), as: entity.fields[field].type)
                        )
                    })
                new = Self.object(entity, changedAssignments.map { assignments[$0] })
            }
            pending.append((last, identifier, changed, old, new))
        }
        sqlite3_reset(select)
        if !pending.isEmpty {
            let update = try db.cachedStatement(
                sql: "UPDATE \(entity.table) SET "
                    + assignments.map { "\(SQL.quote(entity.fields[$0.0].name)) = ?" }.joined(separator: ", ")
                    + " WHERE rowid = ?"
            ).sqliteStatement
            for (rowid, identifier, changed, old, new) in pending {
                for (k, (_, value)) in assignments.enumerated() { SQL.bind(value, to: update, at: Int32(k + 1)) }
                sqlite3_bind_int64(update, Int32(assignments.count + 1), rowid)
                try SQL.step(update, db)
                sqlite3_reset(update)
                try logChange(
                    entity: entity.name, identifier: identifier, kind: .update, fields: JSONText.array(changed),
                    old: old, new: new)
                counts.updated += 1
            }
        }
        return (counts, last, visited == limit)
    }

    /// The JSON object of `entity`'s fields (by position) with their values.
    package static func object(_ entity: EntitySchema, _ pairs: [(Int, Value)]) -> String {
        var out = "{"
        for (i, (f, value)) in pairs.enumerated() {
            if i > 0 { out.append(",") }
            JSONText.appendQuoted(entity.fields[f].name, to: &out)
            out.append(":")
            JSONText.append(value, rawJSON: entity.fields[f].type == .json, to: &out)
        }
        out.append("}")
        return out
    }

    private func fetchRowids(_ query: SQLFragment, limit: Int, cached: Bool) throws -> [Int64] {
        var rowids: [Int64] = []
        try select(query.sql + " LIMIT \(limit)", query.arguments, cached: cached) {
            rowids.append(sqlite3_column_int64($0, 0))
        }
        return rowids
    }
}
