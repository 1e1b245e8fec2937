import DepotEngine
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// SQL text, values and errors for PostgreSQL.
enum PostgresSQL {
    /// `name` as a quoted identifier.
    static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The column type of a field. Dates are Depot's canonical text, as in
    /// an SQLite store (`2025-05-02` or `2025-05-02T09:30:00.000Z`): a
    /// `timestamptz` would turn a day into a midnight and lose which one was
    /// written; the canonical forms sort in time order as text. JSON is
    /// `json`, which keeps its text as written.
    static func type(_ type: FieldType) -> String {
        switch type {
        case .string, .date: "text"
        case .int: "bigint"
        case .double: "double precision"
        case .bool: "boolean"
        case .json: "json"
        }
    }

    /// A text as an SQL string literal (for statements that take no
    /// parameters; bound values everywhere else).
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// `COPY table(columns) FROM STDIN` of what `write` sends, on its own
    /// task, so that the caller's cancellation does not reach it: a COPY
    /// once begun runs to its end (it is one save's rows at most), and the
    /// cancelled caller stops after it, at its next check.
    ///
    /// postgres-nio 1.33 cannot take a cancel in the middle of a COPY: a
    /// writer waiting for the server's backpressure closes the connection
    /// when its task is cancelled, and the `CopyFail` that `copyFrom` then
    /// sends trips a precondition of the connection's state machine, which
    /// kills the process (issue 51: a job cancelled through another host
    /// killed the host running it in 4 of 6 runs).
    ///
    /// A connection lost in the middle of a COPY (the server restarted, or
    /// ended the backend) ends it with an error at once: postgres-nio's
    /// writer, waiting for the server's backpressure on a connection that
    /// closed, never returned (issue 51: the job stayed `running`, its lease
    /// renewed, for good). The stuck task is left behind; it holds one
    /// batch until the process ends.
    static func copy(
        _ connection: PostgresConnection, into table: String, columns: [String], logger: Logger,
        _ write: @escaping @Sendable (PostgresCopyFromWriter) async throws -> Void
    ) async throws {
        // Unstructured: see above; nothing cancels it.
        let copying = Task {
            try await connection.copyFrom(table: table, columns: columns, logger: logger, writeData: write)
        }
        try await ConnectionWatch.race(copying, on: connection, lost: lostInCopy)
    }

    static let lostInCopy = DepotError(
        .database,
        "the connection to the PostgreSQL server was lost in the middle of a COPY (the server restarted or "
            + "ended it); nothing of that save was kept")

    /// Runs `body`'s statement on `connection`, ending with an error as
    /// soon as the connection closes.
    ///
    /// postgres-nio 1.33 can leave a statement waiting for ever on a
    /// connection that closes under it: one queued behind a COPY whose
    /// connection was lost, or sent between the server's error and the
    /// socket's close (issue 51: the server ended a COPY's backend, and the
    /// job stayed `running` on its host, lease renewed, with no statement
    /// left on the server). The statement runs on a task of its own, which
    /// the caller's cancellation reaches; a stuck one is left behind.
    static func whileOpen<T: Sendable>(
        _ connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try checkOpen(connection)
        // Unstructured: see above; cancelled with its caller, and run where
        // its caller asked (a lease's renewal, on its own thread).
        let running = Task(executorPreference: LeaseExecutor.current) { try await body() }
        return try await withTaskCancellationHandler {
            try await ConnectionWatch.race(running, on: connection, lost: lostConnection)
        } onCancel: {
            running.cancel()
        }
    }

    static let lostConnection = DepotError(
        .database, "the connection to the PostgreSQL server was lost; what it was doing was not kept")

    /// Refuses a statement on a connection that closed: after a COPY stuck
    /// by its lost connection (``copy(_:into:columns:logger:_:)``), the
    /// connection's next statement, queued behind the COPY, never returned.
    static func checkOpen(_ connection: PostgresConnection) throws {
        if connection.isClosed { throw lostConnection }
    }

    /// A name as PostgresNIO's `copyFrom` wants it: it puts the name
    /// between double quotes as given, so a double quote in it is doubled here.
    static func copyName(_ name: String) -> String {
        name.replacingOccurrences(of: "\"", with: "\"\"")
    }

    /// A field's column read as the text of its Depot value. Rows are read
    /// by position; the column is named `"\u{1}"`, never a field's name:
    /// PostgreSQL's `ORDER BY "budget"` sorts by an output column so named
    /// before the table's, and that one is text ("900" after "2500.5").
    static func selectText(_ field: Field, table alias: String? = nil) -> String {
        (alias.map { $0 + "." } ?? "") + quote(field.name) + "::text" + textAlias
    }

    /// ` AS "\u{1}"`: the name of a column read as text (``selectText(_:table:)``).
    static let textAlias = " AS \"\u{1}\""

    /// ` COLLATE "C"` for a text field, so that it sorts by bytes as SQLite does.
    static func byteOrder(_ entity: EntitySchema, _ field: String) -> String {
        guard let position = entity.position(of: field) else { return "" }
        let type = entity.fields[position].type
        return type == .string || type == .date ? " COLLATE \"C\"" : ""
    }

    /// The Depot value of a field's text (see ``selectText(_:table:)``).
    static func value(_ text: String?, as type: FieldType) -> Value {
        guard let text else { return .null }
        switch type {
        case .string, .date, .json: return .string(text)
        // A computed integer out of the 64-bit range (numeric) comes as a double, as SQLite gives it.
        case .int: return Int64(text).map(Value.int) ?? Double(text).map(Value.double) ?? .string(text)
        case .double: return Double(text).map(Value.double) ?? .string(text)
        case .bool: return .bool(text == "true" || text == "t")
        }
    }

    /// The values a compiled predicate binds (`$1`…), typed as Depot's.
    static func bindings(_ values: [Value]) -> PostgresBindings {
        var binds = PostgresBindings()
        for v in values {
            switch v {
            case .null: binds.appendNull()
            case .bool(let b): binds.append(b)
            case .int(let i): binds.append(i)
            case .double(let d): binds.append(d)
            case .string(let s): binds.append(s)
            }
        }
        return binds
    }

    /// Runs `sql`; every row's cells as text (nil for null). The query's
    /// columns must be of a text-like type (cast with `::text`).
    static func textRows(
        _ connection: PostgresConnection, _ sql: String, _ binds: PostgresBindings = PostgresBindings(),
        logger: Logger
    ) async throws -> [[String?]] {
        try await whileOpen(connection) {
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            var out: [[String?]] = []
            for try await row in rows {
                var cells: [String?] = []
                for cell in row {
                    cells.append(cell.bytes.map { String(buffer: $0) })
                }
                out.append(cells)
            }
            return out
        }
    }

    /// The first cell of the first row, if there is one and it is not null.
    static func scalar(_ rows: [[String?]]) -> String? {
        rows.first.flatMap { $0.first ?? nil }
    }

    /// Takes the advisory lock named `name` until the end of the transaction.
    static func lock(_ connection: PostgresConnection, _ name: String, logger: Logger) async throws {
        var binds = PostgresBindings()
        binds.append(name)
        try await execute(connection, "SELECT pg_advisory_xact_lock(hashtext($1))", binds, logger: logger)
    }

    /// Runs `sql`, which returns no rows that matter.
    static func execute(
        _ connection: PostgresConnection, _ sql: String, _ binds: PostgresBindings = PostgresBindings(),
        logger: Logger
    ) async throws {
        _ = try await whileOpen(connection) {
            try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        }
    }

    /// A server's error in a sentence: its message and SQLSTATE, or the
    /// client's own description (a refused connection).
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return message + state
            }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        return String(describing: error)
    }

    /// Appends `value` as a field of COPY's text format: `\N` for null,
    /// backslash, tab, newline and carriage return escaped.
    static func appendCopyField(_ value: Value, to out: inout ByteBuffer) {
        switch value {
        case .null: out.writeStaticString("\\N")
        case .bool(let b): out.writeStaticString(b ? "t" : "f")
        case .int, .double: out.writeString(text(of: value) ?? "")
        case .string(var s):
            s.withUTF8 { appendCopyText(UnsafeRawBufferPointer($0), to: &out) }
        }
    }

    /// PostgreSQL's text of a value, as its input functions read it; nil for null.
    static func text(of value: Value) -> String? {
        switch value {
        case .null: nil
        case .bool(let b): b ? "t" : "f"
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? "\(d)" : (d.isNaN ? "NaN" : (d < 0 ? "-Infinity" : "Infinity"))
        case .string(let s): s
        }
    }

    /// UTF-8 text as a field of COPY's text format: backslash, tab, newline
    /// and carriage return escaped.
    static func appendCopyText(_ bytes: UnsafeRawBufferPointer, to out: inout ByteBuffer) {
        var start = 0
        for (i, byte) in bytes.enumerated() {
            let escaped: StaticString
            switch byte {
            case UInt8(ascii: "\\"): escaped = "\\\\"
            case UInt8(ascii: "\t"): escaped = "\\t"
            case UInt8(ascii: "\n"): escaped = "\\n"
            case UInt8(ascii: "\r"): escaped = "\\r"
            default: continue
            }
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[start..<i]))
            out.writeStaticString(escaped)
            start = i + 1
        }
        out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[start...]))
    }
}

extension FetchQuery {
    /// What a row selects for `field`, as text: its column, or a computed field's SQL.
    func selectText(_ field: Field) -> String {
        expressions[field.name].map { "(\($0))::text" + PostgresSQL.textAlias } ?? PostgresSQL.selectText(field)
    }
}
