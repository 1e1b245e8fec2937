public import DepotEngine
import NIOCore
import PostgresNIO

/// The read primitives of a PostgreSQL store that its reader
/// (``PostgresReader``) gives the engine, whose reads are written once
/// over them.
extension PostgresStore {
    /// Runs `body` in one repeatable-read, read-only transaction: one
    /// snapshot, as an SQLite store's read.
    nonisolated func snapshot<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        do {
            return try await transaction { connection in
                try await PostgresSQL.execute(
                    connection, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
                return try await body(connection)
            }
        } catch {
            throw translate(error)
        }
    }

    /// Hands out the rows of `statement` (its columns read as text) a
    /// chunk at a time as the server sends them: 8,192 rows as values, or
    /// encoded (``StoreReading/stream(_:fields:as:long:_:)``), in one
    /// statement (one snapshot); cancellation ends it between chunks.
    nonisolated func stream(
        _ statement: SQLStatement, fields: [Field], as form: RowForm,
        _ body: @escaping @Sendable (RowChunk) throws -> Bool
    ) async throws {
        let (sql, arguments) = statement.render(PostgreSQLDialect(), table: table, entityTable: table)
        let binds = PostgresSQL.bindings(arguments)
        try await read { connection in
            try await PostgresSQL.whileOpen(connection) {
                var chunk: [[Value]] = []
                var first = true
                func flush() throws -> Bool {
                    defer { chunk.removeAll(keepingCapacity: true) }
                    var out = RowChunk(count: chunk.count)
                    switch form {
                    case .values: out.values = chunk
                    case .json:
                        var text = ""
                        RecordSet(fields: fields, rows: chunk).appendJSONElements(to: &text, afterOthers: !first)
                        out.bytes = Array(text.utf8)
                    case .lines(let format):
                        var text = ""
                        RecordSet(fields: fields, rows: chunk).appendLines(as: format, to: &text)
                        out.bytes = Array(text.utf8)
                    }
                    first = first && chunk.isEmpty
                    guard try body(out) else { return false }
                    try Task.checkCancellation()
                    return true
                }
                let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: self.logger)
                for try await row in rows {
                    var values: [Value] = []
                    values.reserveCapacity(fields.count)
                    for (i, cell) in row.enumerated() {
                        values.append(PostgresSQL.value(cell.bytes.map { String(buffer: $0) }, as: fields[i].type))
                    }
                    chunk.append(values)
                    if chunk.count == 8_192 {
                        guard try flush() else { return }
                    }
                }
                if !chunk.isEmpty { _ = try flush() }
            }
        }
    }
}
