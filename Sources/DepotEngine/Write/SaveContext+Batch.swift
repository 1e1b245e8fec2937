import GRDB
import GRDBSQLite

/// The record primitives of an SQLite store's save (``WriteContext``): rows
/// named by their rowid, taken in storage order.
extension SaveContext {
    /// The records of `selection` with a rowid above `after`, at most
    /// `limit`, in rowid order, each with its identifier and the values of
    /// the fields at `positions`.
    func records(_ selection: RowSelection, positions: [Int], after: Int64, limit: Int) throws -> [StoredRecord<Int64>]
    {
        guard case .matching(let filter) = selection.kind else {
            throw DepotError(.invalidArgument, "an update takes the records a predicate matches")
        }
        let entity = selection.entity
        let ids = entity.identifierIndexes
        let selected = ids + positions
        let columns =
            selected.map { SQL.quote(entity.fields[$0].name) } + selection.computed.map(\.sql)
        let types = selected.map { entity.fields[$0].type } + selection.computed.map { $0.type ?? .string }
        var found: [StoredRecord<Int64>] = []
        // The computed columns' values are bound first, then the predicate's, then the cursor.
        try select(
            "SELECT rowid, " + columns.joined(separator: ", ")
                + " FROM \(entity.table) WHERE (\(filter.sql)) AND rowid > ? ORDER BY rowid LIMIT \(limit)",
            filter.arguments + [.int(after)], cached: filter.recurs
        ) { statement in
            // By the value's storage class: a computed integer out of range is a double.
            let values = types.indices.map { SQL.column(statement, Int32($0 + 1), as: types[$0]) }
            found.append(
                StoredRecord(
                    key: sqlite3_column_int64(statement, 0), identifier: Array(values[..<ids.count]),
                    values: Array(values[ids.count...])))
        }
        return found
    }

    /// Deletes the record of `rowid`, giving the values it held in the
    /// fields at `positions`; nil when it is gone already.
    ///
    /// The values are read before the delete, not with RETURNING: SQLite
    /// 3.40's RETURNING gave an INTEGER column that follows a REAL one as
    /// a float (a bool's false came back as 0.0; HistoryValuesOrderTests).
    func remove(_ rowid: Int64, of entity: EntitySchema, returning positions: [Int]) throws -> [Value]? {
        var values: [Value]?
        try select(
            "SELECT " + positions.map { SQL.quote(entity.fields[$0].name) }.joined(separator: ", ")
                + " FROM \(entity.table) WHERE rowid = ?", [.int(rowid)], cached: true
        ) { statement in
            values = positions.indices.map { SQL.column(statement, Int32($0), as: entity.fields[positions[$0]].type) }
        }
        guard let values else { return nil }
        try run("DELETE FROM \(entity.table) WHERE rowid = ?", [.int(rowid)])
        return values
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

    /// Runs a statement that returns no rows, cached (it recurs: a
    /// record's delete, update or nullify).
    func run(_ sql: String, _ arguments: [Value]) throws {
        let statement = try db.cachedStatement(sql: sql).sqliteStatement
        for (i, v) in arguments.enumerated() { SQL.bind(v, to: statement, at: Int32(i + 1)) }
        defer { sqlite3_reset(statement) }
        try SQL.step(statement, db)
    }
}
