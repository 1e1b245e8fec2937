import DepotWire
import GRDB
import GRDBSQLite

/// A batch update's chunk in a few statements (an SQLite store): the same
/// records, values, history rows and counts as ``WriteContext/updateRows``
/// writes record by record, without a round trip per record through
/// Swift. It is what makes a computed update over millions of records cost
/// about what SQLite's own `UPDATE` and the history's rows cost (issue #32).
///
/// It takes a chunk only when it can write exactly what the record-by-record
/// path would: computed values into `int` and `double` fields, constants of
/// any type, identifiers of `int`, `string` and `date` fields. A chunk with a
/// record whose computed value its field cannot hold (null in a required
/// field, an integer out of range) is left to the record-by-record path,
/// which rejects that record and lists it.
extension SaveContext {
    /// The chunk of at most `limit` records of `selection` after rowid
    /// `after`, written; nil when it is left to the record-by-record path
    /// (nothing was written then).
    func bulkUpdate(
        _ selection: RowSelection, assignments: [(Int, Value)], computed: [Int], after: Int64, limit: Int
    ) throws -> (counts: WriteCounts, last: Int64?, more: Bool)? {
        let entity = selection.entity
        guard store.bulkUpdates, case .matching(let filter) = selection.kind,
            computed.count == selection.computed.count,
            // Computed values its field holds as they come: a number into a
            // `double` field, an integer into an `int` one.
            zip(computed, selection.computed).allSatisfy({ position, column in
                switch (entity.fields[position].type, column.type) {
                case (.double, .int?), (.double, .double?), (.int, .int?): true
                default: false
                }
            }),
            let shape = BulkUpdateShape(entity, assignments, computed)
        else { return nil }
        let scratch = try shape.scratch(on: db)
        defer { try? db.execute(sql: "DELETE FROM \(scratch)") }
        // The records with their old values and the computed ones, computed once.
        try run(
            "INSERT INTO \(scratch) SELECT rowid, rowid, \(shape.identifierJSON), "
                + shape.fields.map { SQL.quote(entity.fields[$0].name) }.joined(separator: ", ")
                + selection.computed.map { ", " + $0.sql }.joined()
                + " FROM \(entity.table) WHERE (\(filter.sql)) AND rowid > ? ORDER BY rowid LIMIT \(limit)",
            filter.arguments + [.int(after)])
        guard let done = try writeBulk(shape, from: scratch) else { return nil }
        return (done.counts, done.last, done.count == limit)
    }

    /// A save's updates of `fields` (``WriteContext/bulkSet(_:fields:rows:)``):
    /// the rows go into a temporary table, are matched to their records by
    /// identifier, and are written as a bulk update's chunk whose computed
    /// values are the given ones. Declined (nil) for a field that holds a
    /// relationship's reference (the record-by-record path checks it), an
    /// identifier of a type ``BulkUpdateShape`` does not write, a record
    /// not stored or given twice, or a value the record-by-record path refuses.
    func bulkSet(_ entity: EntitySchema, fields: [Int], rows: [[Value]]) throws -> [Bool]? {
        let references = Set(entity.relationshipColumns.values.joined())
        guard store.bulkUpdates, !rows.isEmpty,
            !fields.contains(where: { references.contains(entity.fields[$0].name) }),
            let shape = BulkUpdateShape(entity, [], fields)
        else { return nil }
        let ids = entity.identifier
        let input = "temp.depot_set_\(ids.count)_\(fields.count)"
        try db.execute(
            sql: "CREATE TABLE IF NOT EXISTS \(input)(depot_seq INTEGER PRIMARY KEY"
                + ids.indices.map { ", depot_k\($0 + 1)" }.joined()
                + fields.indices.map { ", depot_v\($0 + 1)" }.joined() + ")")
        defer { try? db.execute(sql: "DELETE FROM \(input)") }
        let insert =
            "INSERT INTO \(input) VALUES (?" + String(repeating: ", ?", count: ids.count + fields.count) + ")"
        for (seq, row) in rows.enumerated() { try run(insert, [.int(Int64(seq))] + row) }
        let scratch = try shape.scratch(on: db)
        defer { try? db.execute(sql: "DELETE FROM \(scratch)") }
        // Each row's record by its identifier (compared as `"id" = ?` compares
        // a bound value); one stored record per row, or the path declines.
        let match = ids.indices.map { "t.\(SQL.quote(ids[$0])) = s.depot_k\($0 + 1)" }.joined(separator: " AND ")
        try run(
            "INSERT OR IGNORE INTO \(scratch) SELECT t.rowid, s.depot_seq, \(shape.identifierJSON), "
                + fields.map { "t.\(SQL.quote(entity.fields[$0].name))" }.joined(separator: ", ")
                + fields.indices.map { ", s.depot_v\($0 + 1)" }.joined()
                + " FROM \(input) AS s CROSS JOIN \(entity.table) AS t ON \(match)", [])
        guard db.changesCount == rows.count else { return nil }
        var changed = Array(repeating: true, count: rows.count)
        try select("SELECT depot_seq FROM \(scratch) WHERE NOT \(shape.changed)", [], cached: true) {
            changed[Int(sqlite3_column_int64($0, 0))] = false
        }
        guard try writeBulk(shape, from: scratch) != nil else { return nil }
        return changed
    }

    /// Writes the records of `scratch` (filled as ``BulkUpdateShape`` lays
    /// it out) with their new values and logs their changes in the order of
    /// `depot_seq`; nil, with nothing written, when one of its new values is
    /// one the record-by-record path refuses.
    ///
    /// - Returns: the counts, how many records it held, the largest rowid.
    func writeBulk(_ shape: BulkUpdateShape, from scratch: String) throws
        -> (counts: WriteCounts, count: Int, last: Int64?)?
    {
        let entity = shape.entity
        var (count, last, refused, changed): (Int, Int64?, Int64, Int64) = (0, nil, 0, 0)
        try select(
            "SELECT count(*), max(depot_r), total(\(shape.refused)), total(\(shape.changed)) FROM \(scratch)",
            shape.constants, cached: true
        ) { statement in
            count = Int(sqlite3_column_int64(statement, 0))
            if sqlite3_column_type(statement, 1) != SQLITE_NULL { last = sqlite3_column_int64(statement, 1) }
            refused = sqlite3_column_int64(statement, 2)
            changed = sqlite3_column_int64(statement, 3)
        }
        if refused > 0 { return nil }
        var counts = WriteCounts()
        counts.updated = Int(changed)
        counts.unchanged = count - Int(changed)
        guard changed > 0 else { return (counts, count, last) }
        // After the changes logged before, in their order.
        try flushChanges()
        let values = entity.history == .values
        try run(
            "INSERT INTO depot_changes(txn, entity, identifier, kind, fields, old, new, rid) "
                + "SELECT ?, ?, depot_id, 'update', \(shape.fieldsJSON), \(values ? shape.oldJSON : "NULL"), "
                + "\(values ? shape.newJSON : "NULL"), depot_r FROM \(scratch) WHERE \(shape.changed) ORDER BY depot_seq",
            [.int(try historyTransaction()), .string(entity.name)] + shape.historyArguments(values: values))
        // Each record found by its rowid from the scratch table's list (an
        // UPDATE … FROM would scan the entity's table for each chunk).
        let names = shape.fields.map { SQL.quote(entity.fields[$0].name) }
        var set = shape.constants.indices.map { "\(names[$0]) = ?" }
        let computed = shape.constants.count..<shape.fields.count
        if !computed.isEmpty {
            set.append(
                "(" + computed.map { names[$0] }.joined(separator: ", ") + ") = (SELECT "
                    + computed.map { shape.new($0) }.joined(separator: ", ")
                    + " FROM \(scratch) WHERE depot_r = \(entity.table).rowid)")
        }
        try run(
            "UPDATE \(entity.table) SET \(set.joined(separator: ", ")), depot_token = ? "
                + "WHERE rowid IN (SELECT depot_r FROM \(scratch) WHERE \(shape.changed))",
            shape.constants + [.int(try nextToken())] + shape.constants)
        return (counts, count, last)
    }
}

/// The SQL of a bulk update's chunk for one update: its fields (constants
/// first, then computed) read from a scratch table of the chunk's records
/// (`depot_r` the rowid, `depot_seq` the order of the history's rows,
/// `depot_id` the identifier's JSON, `depot_o1`… the fields' old values,
/// `depot_n1`… the computed values; no field's name begins with `depot_`).
struct BulkUpdateShape {
    /// The fields written, by entity position: the constants', then the computed ones.
    let fields: [Int]
    /// The constants' values, in the order of `fields`.
    let constants: [Value]
    let identifierJSON: String
    let entity: EntitySchema
    private let constantJSON: [String]

    /// Nil when the update is not one a bulk chunk writes exactly as the
    /// record-by-record path: an identifier of another type than `int`,
    /// `string` or `date`, or a constant set on a relationship's column
    /// (the record-by-record path checks the record it names).
    init?(_ entity: EntitySchema, _ assignments: [(Int, Value)], _ computed: [Int]) {
        guard !(assignments.isEmpty && computed.isEmpty) else { return nil }
        let references = Set(entity.relationshipColumns.values.joined())
        guard !assignments.contains(where: { references.contains(entity.fields[$0.0].name) }) else { return nil }
        // The identifier's JSON as `Identifier.appendJSON` writes it:
        // SQLite's json_quote escapes text as `JSONText.appendQuoted` does.
        let ids = entity.identifierIndexes.map { entity.fields[$0] }
        var parts: [String] = []
        for field in ids {
            switch field.type {
            case .int: parts.append(ids.count == 1 ? "CAST(\(SQL.quote(field.name)) AS TEXT)" : SQL.quote(field.name))
            case .string, .date:
                parts.append(ids.count == 1 ? "json_quote(\(SQL.quote(field.name)))" : SQL.quote(field.name))
            default: return nil
            }
        }
        identifierJSON = ids.count == 1 ? parts[0] : "json_array(\(parts.joined(separator: ", ")))"
        self.entity = entity
        fields = assignments.map(\.0) + computed
        constants = assignments.map(\.1)
        constantJSON = assignments.map { position, value in
            var out = ""
            JSONText.append(value, rawJSON: entity.fields[position].type == .json, to: &out)
            return out
        }
    }

    /// The scratch table of this shape on `db`, created the first time
    /// (a temporary table lives as long as its connection), empty.
    func scratch(on db: Database) throws -> String {
        let computed = fields.count - constants.count
        let name = "temp.depot_bulk_\(fields.count)_\(computed)"
        try db.execute(
            sql: "CREATE TABLE IF NOT EXISTS \(name)(depot_r INTEGER PRIMARY KEY, depot_seq, depot_id"
                + fields.indices.map { ", depot_o\($0 + 1)" }.joined()
                + (0..<computed).map { ", depot_n\($0 + 1)" }.joined()
                + ")")
        return name
    }

    /// The new value of field `k` (an index in `fields`): a constant's
    /// parameter or a computed column.
    func new(_ k: Int) -> String { k < constants.count ? "?" : "depot_n\(k - constants.count + 1)" }

    /// Whether field `k` changes: the stored value compared as
    /// ``Value/storedEqual(_:_:)`` does (numbers by value, text by its bytes:
    /// the scratch table's columns have no collation but BINARY).
    private func changes(_ k: Int) -> String { "depot_o\(k + 1) IS NOT \(new(k))" }

    /// Whether the record changes at all; binds the constants once, in order.
    var changed: String {
        "(" + fields.indices.map(changes).joined(separator: " OR ") + ")"
    }

    /// Whether the record is one the record-by-record path refuses: its
    /// computed value null in a required field, a double (an integer out
    /// of range) in an `int` one, or an infinity in a `double` one. It has no parameters.
    var refused: String {
        let conditions = fields.indices.dropFirst(constants.count).flatMap { k -> [String] in
            let field = entity.fields[fields[k]]
            var out: [String] = []
            if !field.isOptional { out.append("\(new(k)) IS NULL") }
            if field.type == .int { out.append("typeof(\(new(k))) = 'real'") }
            // An overflow to ±infinity (SQLite's 9e999), refused as the
            // record-by-record path refuses it.
            if field.type == .double { out.append("abs(\(new(k))) > 1.7976931348623157e308") }
            return out
        }
        return conditions.isEmpty ? "0" : "(" + conditions.joined(separator: " OR ") + ")"
    }

    /// The JSON text of a field's value in column `column`, as
    /// `JSONText.append` writes it (`depot_number` is its own formatting of
    /// doubles, registered on every connection).
    private func json(_ column: String, _ k: Int) -> String {
        switch entity.fields[fields[k]].type {
        case .int: "coalesce(CAST(\(column) AS TEXT), 'null')"
        case .double: "depot_number(\(column))"
        case .string, .date: "json_quote(\(column))"
        case .bool: "CASE WHEN \(column) IS NULL THEN 'null' WHEN \(column) THEN 'true' ELSE 'false' END"
        case .json: "coalesce(\(column), 'null')"
        }
    }

    /// The changed fields' names, a JSON array (a field's name has no `'`:
    /// it is doubled all the same).
    var fieldsJSON: String {
        list { k in
            var name = ""
            JSONText.appendQuoted(entity.fields[fields[k]].name, to: &name)
            return "'" + name.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
        }
    }

    /// The changed fields' old values, a JSON array in the order of ``fieldsJSON``.
    var oldJSON: String { list { json("depot_o\($0 + 1)", $0) } }

    /// Their new values: a constant's JSON is a parameter.
    var newJSON: String { list { $0 < constants.count ? "?" : json(new($0), $0) } }

    /// A JSON array of `item(k)` for each field that changes, in order.
    /// Parameters: ``changed``'s of each field, then the item's.
    private func list(_ item: (Int) -> String) -> String {
        if fields.count == 1 { return "'[' || \(item(0)) || ']'" }
        return "'[' || substr("
            + fields.indices.map { "CASE WHEN \(changes($0)) THEN ',' || \(item($0)) ELSE '' END" }
            .joined(separator: " || ") + ", 2) || ']'"
    }

    /// The parameters of the history's INSERT after its transaction and
    /// entity: those of the fields, old and new lists, then of ``changed``.
    func historyArguments(values: Bool) -> [Value] {
        let perField: (Int, Bool) -> [Value] = { k, newItem in
            var out: [Value] = []
            if self.fields.count > 1, k < self.constants.count { out.append(self.constants[k]) }
            if newItem, k < self.constants.count { out.append(.string(self.constantJSON[k])) }
            return out
        }
        var arguments = fields.indices.flatMap { perField($0, false) }
        if values {
            arguments += fields.indices.flatMap { perField($0, false) }
            arguments += fields.indices.flatMap { perField($0, true) }
        }
        return arguments + constants
    }
}

/// `depot_number(x)`: the JSON text of a double as ``JSONText/number(_:)``
/// writes it (`null` for SQL null), so that history written by SQL reads
/// as the history written record by record. SQLite's own text of a REAL
/// keeps 15 digits, which does not always give the same double back.
///
/// Registered with SQLite's C interface, not GRDB's `DatabaseFunction`,
/// whose call wraps each argument in a Swift value: it runs twice per
/// record of a computed update.
enum JSONNumberFunction {
    static func install(on connection: OpaquePointer) {
        sqlite3_create_function_v2(
            connection, "depot_number", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, _, arguments in
                guard let value = arguments?[0] else { return }
                var text: String
                switch sqlite3_value_type(value) {
                case SQLITE_NULL: text = "null"
                case SQLITE_INTEGER, SQLITE_FLOAT: text = JSONText.number(sqlite3_value_double(value))
                default:
                    text = ""
                    JSONText.appendQuoted(
                        sqlite3_value_text(value).map { String(cString: $0) } ?? "", to: &text)
                }
                text.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) {
                        sqlite3_result_text(context, $0.baseAddress, Int32($0.count), SQL.transient)
                    }
                }
            }, nil, nil, nil)
    }
}

extension SaveContext {
    /// Takes back, in a few statements, the changes of history transaction
    /// `txn` after its first `skip`, at most `limit` of them, as the
    /// record-by-record revert would (each record's fields set back to
    /// their old values, a change logged for each record that changes);
    /// nil, with nothing written, unless every one of them is an update of
    /// the same fields of one entity that keeps values, whose record is
    /// stored, once, and not changed since in those fields (no conflict:
    /// its last change is at most `newest`, or it holds what the change wrote).
    ///
    /// - Parameter after: the id in `depot_changes` of the transaction's
    ///   `skip`-th change, when the caller knows it (the last page's):
    ///   found again by counting otherwise, which costs a scan of `skip` rows.
    /// - Returns: the counts, how many changes it took back, whether more
    ///   of the transaction's changes follow, and the id of the last.
    func bulkRevert(transaction txn: Int64, skip: Int, after: Int64?, limit: Int, newest: Int64) throws
        -> (counts: WriteCounts, taken: Int, continues: Bool, last: Int64)?
    {
        guard store.bulkUpdates else { return nil }
        var start: Int64 = 0
        if let after {
            start = after
        } else if skip > 0 {
            try select(
                "SELECT id FROM depot_changes WHERE txn = ? ORDER BY id LIMIT 1 OFFSET ?",
                [.int(txn), .int(Int64(skip - 1))], cached: true
            ) { start = sqlite3_column_int64($0, 0) }
        }
        let page =
            "(SELECT id, entity, identifier, kind, fields, old, new, rid FROM depot_changes WHERE txn = ? AND id > ? "
            + "ORDER BY id LIMIT ?)"
        let pageArguments: [Value] = [.int(txn), .int(start), .int(Int64(limit))]
        // The page's size and last change from the transaction's index
        // alone, and the entity and fields of its first change: each of
        // the others must have the same (the page's INSERT below takes only
        // those, and the page declines when it took fewer than all).
        var (count, entityName, fieldList, last) = (0, "", "", Int64(0))
        try select(
            "SELECT count(*), max(id) FROM (SELECT id FROM depot_changes WHERE txn = ? AND id > ? ORDER BY id LIMIT ?)",
            pageArguments, cached: true
        ) { statement in
            count = Int(sqlite3_column_int64(statement, 0))
            last = sqlite3_column_int64(statement, 1)
        }
        var update = false
        try select(
            "SELECT entity, fields, kind = 'update' AND fields IS NOT NULL FROM depot_changes "
                + "WHERE txn = ? AND id > ? ORDER BY id LIMIT 1",
            [.int(txn), .int(start)], cached: true
        ) { statement in
            entityName = SQL.text(statement, 0)
            fieldList = SQL.text(statement, 1)
            update = sqlite3_column_int64(statement, 2) != 0
        }
        guard count > 0, update, let entity = try? store.entity(entityName), entity.history == .values,
            case .array(let items)? = MiniJSON.parse(fieldList)
        else { return nil }
        var positions: [Int] = []
        for item in items {
            guard case .string(let name) = item, !name.contains("\""), let p = entity.position(of: name),
                !entity.identifier.contains(name), entity.fields[p].type != .json
            else { return nil }
            positions.append(p)
        }
        guard !positions.isEmpty, let shape = BulkUpdateShape(entity, [], positions) else { return nil }
        // A value of the change's old or new JSON: an array in the order of
        // its fields, or an object (written before compact values). The
        // one number of a one-field array is its text between the brackets
        // (no JSON to parse: the common case of a computed update's revert).
        func value(_ column: String, _ k: Int) -> String {
            let field = entity.fields[positions[k]]
            func at(_ path: String) -> String {
                field.type == .double ? "depot_double(\(column) -> '\(path)')" : "\(column) ->> '\(path)'"
            }
            let array =
                field.type == .double && positions.count == 1
                ? "depot_double(substr(\(column), 2, length(\(column)) - 2))" : at("$[\(k)]")
            return
                "(CASE WHEN substr(\(column), 1, 1) = '[' THEN \(array) ELSE \(at("$.\"\(field.name)\"")) END)"
        }
        let ids = entity.identifierIndexes.map { entity.fields[$0] }
        let keys = ids.enumerated().map { i, field in
            let extracted = "json_extract(c.identifier, '\(ids.count == 1 ? "$" : "$[\(i)]")')"
            // One text or integer identifier: its JSON's text without the
            // quotes when it holds no escape, the integer's digits; no JSON to parse.
            let value: String =
                switch (ids.count, field.type) {
                case (1, .string), (1, .date):
                    "(CASE WHEN instr(c.identifier, '\\') = 0 THEN substr(c.identifier, 2, length(c.identifier) - 2) "
                        + "ELSE \(extracted) END)"
                case (1, .int): "CAST(c.identifier AS INTEGER)"
                default: extracted
                }
            return (name: SQL.quote(field.name), value: value)
        }
        func match(_ alias: String) -> String {
            keys.map { "\(alias).\($0.name) = \($0.value)" }.joined(separator: " AND ")
        }
        let fields = positions.map { "t.\(SQL.quote(entity.fields[$0].name))" }
        let scratch = try shape.scratch(on: db)
        defer { try? db.execute(sql: "DELETE FROM \(scratch)") }
        // The page's records, each once, not changed since: the rows left
        // out (deleted since, twice in the page, changed since) leave the
        // page to the record-by-record path. Each record is found by the
        // rowid its change kept (`rid`) when the record there still has the
        // change's identifier, in the table's order (a bulk update logs its
        // records so); by the identifier's index otherwise: a change
        // written without it, a record deleted and written again since.
        let found =
            "coalesce((SELECT h.rowid FROM \(entity.table) AS h WHERE h.rowid = c.rid AND \(match("h"))), "
            + "(SELECT i.rowid FROM \(entity.table) AS i WHERE \(match("i"))))"
        try run(
            "INSERT OR IGNORE INTO \(scratch) SELECT t.rowid, c.id, c.identifier, \(fields.joined(separator: ", ")), "
                + positions.indices.map { value("c.old", $0) }.joined(separator: ", ")
                + " FROM \(page) AS c CROSS JOIN \(entity.table) AS t ON t.rowid = \(found) "
                + "WHERE c.entity = ? AND c.fields = ? AND c.kind = 'update' AND c.old IS NOT NULL "
                + "AND c.new IS NOT NULL AND (coalesce(t.depot_token, 0) <= ? OR NOT ("
                + positions.indices.map { "\(fields[$0]) IS NOT \(value("c.new", $0))" }.joined(separator: " OR ")
                + "))", pageArguments + [.string(entityName), .string(fieldList), .int(newest)])
        guard db.changesCount == count, let done = try writeBulk(shape, from: scratch) else { return nil }
        var continues = false
        try select(
            "SELECT EXISTS (SELECT 1 FROM depot_changes WHERE txn = ? AND id > ?)", [.int(txn), .int(last)],
            cached: true
        ) { continues = sqlite3_column_int64($0, 0) != 0 }
        return (done.counts, count, continues, last)
    }
}

/// `depot_double(text)`: the double a JSON number's text stands for, read
/// as Swift reads it (correctly rounded: the double that was written),
/// null for `null` or SQL null.
enum JSONDoubleFunction {
    static func install(on connection: OpaquePointer) {
        sqlite3_create_function_v2(
            connection, "depot_double", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, _, arguments in
                guard let value = arguments?[0], sqlite3_value_type(value) != SQLITE_NULL,
                    let text = sqlite3_value_text(value)
                else {
                    sqlite3_result_null(context)
                    return
                }
                let count = Int(sqlite3_value_bytes(value))
                let string = String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
                if let double = Double(string) {
                    sqlite3_result_double(context, double)
                } else {
                    sqlite3_result_null(context)
                }
            }, nil, nil, nil)
    }
}
