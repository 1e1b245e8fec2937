public import DepotEngine
import NIOCore
import PostgresNIO

/// The record primitives of a PostgreSQL store's save (``WriteContext``):
/// records named by their identifier, taken in identifier order (an SQLite
/// store takes them in storage order), text by its bytes.
extension PostgresSaveContext {
    /// `"a" = $1 AND …`: the record of `entity` whose identifier (or the
    /// reference `columns`) is bound from `$first` on.
    static func identifierMatch(_ entity: EntitySchema, columns: [String]? = nil, first: Int = 1) -> String {
        (columns ?? entity.identifier).enumerated().map { k, name in "\(PostgresSQL.quote(name)) = $\(first + k)" }
            .joined(separator: " AND ")
    }

    /// `ORDER BY` the identifier, text by its bytes.
    static func identifierOrder(_ entity: EntitySchema) -> String {
        entity.identifier.map { PostgresSQL.quote($0) + PostgresSQL.byteOrder(entity, $0) }.joined(separator: ", ")
    }

    /// The identifier's columns of `entity`, as text.
    static func identifierColumns(_ entity: EntitySchema) -> String {
        entity.identifierIndexes.map { PostgresSQL.selectText(entity.fields[$0]) }.joined(separator: ", ")
    }

    /// The identifiers of `entity` that `sql` (selecting the identifier's
    /// columns as text) returns.
    func identifiers(_ entity: EntitySchema, _ sql: String, _ binds: PostgresBindings) async throws -> [[Value]] {
        let fields = entity.identifierIndexes.map { entity.fields[$0] }
        return try await PostgresSQL.textRows(connection, sql, binds, logger: store.logger).map { row in
            zip(fields, row).map { PostgresSQL.value($1, as: $0.type) }
        }
    }

    public func records(_ selection: RowSelection, positions: [Int], after cursor: RowCursor, limit: Int)
        async throws -> (records: [StoredRecord<[Value]>], cursor: RowCursor)
    {
        guard case .matching(let filter) = selection.kind else {
            throw DepotError(.invalidArgument, "an update takes the records a predicate matches")
        }
        let entity = selection.entity
        let idPositions = entity.identifierIndexes
        let selected = idPositions + positions
        // The predicate's values are $1…; the keyset's follow.
        var values = filter.arguments
        var keyset = ""
        if case .identifier(let after) = cursor {
            // (a, b) > (x, y), written out so that text compares by its bytes, as the order does.
            var terms: [String] = []
            for k in entity.identifier.indices {
                var parts: [String] = []
                for j in 0..<k {
                    values.append(after[j])
                    parts.append("\(PostgresSQL.quote(entity.identifier[j])) = $\(values.count)")
                }
                values.append(after[k])
                parts.append(
                    "\(PostgresSQL.quote(entity.identifier[k]))\(PostgresSQL.byteOrder(entity, entity.identifier[k])) "
                        + "> $\(values.count)")
                terms.append("(" + parts.joined(separator: " AND ") + ")")
            }
            keyset = " AND (" + terms.joined(separator: " OR ") + ")"
        }
        let columns =
            selected.map { PostgresSQL.selectText(entity.fields[$0]) }
            + selection.computed.map { "(\($0.sql))::text" + PostgresSQL.textAlias }
        let sql =
            "SELECT " + columns.joined(separator: ", ")
            + " FROM \(store.table(entity.name)) WHERE (\(filter.sql))\(keyset) "
            + "ORDER BY \(Self.identifierOrder(entity)) LIMIT \(limit)"
        let rows = try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings(values), logger: store.logger)
        let found = rows.map { row in
            var values = selected.indices.map { PostgresSQL.value(row[$0], as: entity.fields[selected[$0]].type) }
            for (k, column) in selection.computed.enumerated() {
                values.append(PostgresSQL.value(row[selected.count + k], as: column.type ?? .string))
            }
            let identifier = Array(values[..<idPositions.count])
            return StoredRecord(key: identifier, identifier: identifier, values: Array(values[idPositions.count...]))
        }
        return (found, found.last.map { .identifier($0.identifier) } ?? cursor)
    }

    public func remove(_ key: [Value], of entity: EntitySchema, returning positions: [Int]) async throws -> [Value]? {
        let sql =
            "DELETE FROM \(store.table(entity.name)) WHERE \(Self.identifierMatch(entity)) RETURNING "
            + positions.map { PostgresSQL.selectText(entity.fields[$0]) }.joined(separator: ", ")
        let rows = try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings(key), logger: store.logger)
        guard let row = rows.first else { return nil }
        return positions.indices.map { PostgresSQL.value(row[$0], as: entity.fields[positions[$0]].type) }
    }

    public func log(_ change: HistoryChange) async throws {
        try await logChange(
            &pendingChanges, entity: change.entity, identifier: change.identifier, kind: change.kind,
            fields: change.fields.map(JSONText.array), tombstone: change.tombstone, old: change.old, new: change.new)
        // Copied in runs: memory holds at most about a megabyte of them.
        if pendingChanges.readableBytes > 1 << 20 { try await flushChanges() }
    }

    /// Copies the changes logged one by one into the history.
    func flushChanges() async throws {
        guard pendingChanges.readableBytes > 0 else { return }
        let changes = pendingChanges
        pendingChanges = ByteBuffer()
        try await copyChanges(changes)
    }
}
