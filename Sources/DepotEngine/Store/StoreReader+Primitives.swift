import GRDB
import GRDBSQLite

/// The read primitives of an SQLite store (``StoreReading``), on the
/// pool's WAL readers.
extension StoreReader {
    /// Runs `body` in one read snapshot: a reader connection of the pool
    /// lent to it for its length (``ReaderPump``), as a save borrows the
    /// writer's.
    package func snapshot<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T)
        async throws -> T
    {
        let pump = ReaderPump()
        async let served: Void = {
            defer { pump.close() }
            try await pool.read { db in try pump.serve(db) }
        }()
        let value: T
        do {
            value = try await withTaskExecutorPreference(pump) { try await body(SQLiteReadSession(pump: pump)) }
        } catch {
            pump.end(error)
            _ = try? await served
            throw error is DatabaseError ? Store.translate(error, store: schema.name) : error
        }
        pump.end(nil)
        do {
            try await served
        } catch {
            throw Store.translate(error, store: schema.name)
        }
        return value
    }

    /// Hands out the rows of `statement` a chunk at a time
    /// (``StoreReading/stream(_:fields:as:long:_:)``), encoded straight
    /// from SQLite's rows (``RowEncoder``) or read as values.
    package func stream(
        _ statement: SQLStatement, fields: [Field], as form: RowForm, long: Bool,
        _ body: @escaping @Sendable (RowChunk) throws -> Bool
    ) async throws {
        let work: @Sendable (Database) throws -> Void = { db in
            do {
                try Self.stream(db, statement, fields: fields, as: form, body)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_INTERRUPT && Task.isCancelled {
                // GRDB interrupts the statement when the task is cancelled.
                throw CancellationError()
            }
        }
        if long { try await streamRead(work) } else { try await read(work) }
    }

    private static func stream(
        _ db: Database, _ statement: SQLStatement, fields: [Field], as form: RowForm,
        _ body: (RowChunk) throws -> Bool
    ) throws {
        let (sql, arguments) = statement.render(SQLiteDialect(), table: { $0 })
        let prepared = try db.makeStatement(sql: sql)
        defer { withExtendedLifetime(prepared) {} }
        let s = prepared.sqliteStatement
        for (i, value) in arguments.enumerated() { SQL.bind(value, to: s, at: Int32(i + 1)) }
        defer { sqlite3_reset(s) }
        let encoder = RowEncoder(fields: fields)
        let threshold = 1 << 20
        var chunk = RowChunk(count: 0)
        if form != .values { chunk.bytes.reserveCapacity(threshold + 64 * 1024) }
        var first = true
        func flush() throws -> Bool {
            defer {
                chunk.count = 0
                chunk.values.removeAll(keepingCapacity: true)
                chunk.bytes.removeAll(keepingCapacity: true)
            }
            guard try body(chunk) else { return false }
            try Task.checkCancellation()
            return true
        }
        while try SQL.step(s, db) {
            switch form {
            case .values: chunk.values.append(fields.indices.map { SQL.column(s, Int32($0), as: fields[$0].type) })
            case .json:
                if !first { chunk.bytes.append(UInt8(ascii: ",")) }
                encoder.appendJSON(s, to: &chunk.bytes)
            case .lines(.csv): encoder.appendCSV(s, to: &chunk.bytes)
            case .lines(.ndjson):
                encoder.appendJSON(s, to: &chunk.bytes)
                chunk.bytes.append(0x0A)
            }
            first = false
            chunk.count += 1
            if chunk.bytes.count >= threshold || chunk.values.count == 8_192 {
                guard try flush() else { return }
            }
        }
        if chunk.count > 0 { _ = try flush() }
    }
}

/// A read snapshot of an SQLite store as the reads written once use it:
/// its statements run on the reader connection the pump lends.
final class SQLiteReadSession: SQLSession {
    let pump: ReaderPump

    init(pump: ReaderPump) { self.pump = pump }

    func rows(_ statement: SQLStatement) async throws -> [[Value]] {
        try SQLiteSession.rows(pump.context(), statement)
    }
}
