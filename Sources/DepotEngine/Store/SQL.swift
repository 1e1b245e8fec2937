import Foundation
import GRDB
import GRDBSQLite

/// Small helpers for SQL text and for the raw SQLite C API.
///
/// The write path binds and reads values with `sqlite3_*` calls on GRDB's
/// prepared statements instead of GRDB's `StatementArguments`: it runs for
/// every row of every import, where GRDB's per-call allocations would cost
/// more than SQLite itself (see BENCHMARKS.md).
package enum SQL {
    /// `name` as a quoted SQL identifier: `"Organization Name"`.
    package static func quote(_ name: String) -> String {
        // Statements are looked up by their text on every save: a name
        // without a quote (all of them, in practice) skips Foundation's
        // replacing, which cost 5% of a one-record save's time.
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A comma-separated list of `count` parameter markers.
    static func markers(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    // The destructor that tells SQLite to copy bound text.
    nonisolated(unsafe) static let transient = unsafeBitCast(
        OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Binds `value` to parameter `index` (1-based) of `statement`.
    static func bind(_ value: Value, to statement: OpaquePointer, at index: Int32) {
        switch value {
        case .null: sqlite3_bind_null(statement, index)
        case .bool(let b): sqlite3_bind_int64(statement, index, b ? 1 : 0)
        case .int(let i): sqlite3_bind_int64(statement, index, i)
        case .double(let d): sqlite3_bind_double(statement, index, d)
        case .string(let s): bindText(s, to: statement, at: index)
        }
    }

    /// Binds a string without creating a C string copy when the string is
    /// already contiguous UTF-8.
    static func bindText(_ s: String, to statement: OpaquePointer, at index: Int32) {
        var s = s
        s.withUTF8 { buf in
            buf.withMemoryRebound(to: CChar.self) { chars in
                _ = sqlite3_bind_text(statement, index, chars.baseAddress ?? emptyText, Int32(chars.count), transient)
            }
        }
    }

    /// Binds UTF-8 bytes as text (SQLite copies them), or null for `nil`.
    static func bindText(bytes: [UInt8]?, to statement: OpaquePointer, at index: Int32) {
        guard let bytes else {
            sqlite3_bind_null(statement, index)
            return
        }
        bytes.withUnsafeBufferPointer { buf in
            buf.withMemoryRebound(to: CChar.self) { chars in
                _ = sqlite3_bind_text(statement, index, chars.baseAddress ?? emptyText, Int32(chars.count), transient)
            }
        }
    }

    // Never written after creation.
    nonisolated(unsafe) private static let emptyText: UnsafePointer<CChar> = {
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
        p.pointee = 0
        return UnsafePointer(p)
    }()

    /// Reads column `index` (0-based) of the current row as a value of `type`.
    static func column(_ statement: OpaquePointer, _ index: Int32, as type: FieldType) -> Value {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER:
            let i = sqlite3_column_int64(statement, index)
            switch type {
            case .bool: return .bool(i != 0)
            case .double: return .double(Double(i))
            default: return .int(i)
            }
        case SQLITE_FLOAT: return .double(sqlite3_column_double(statement, index))
        default: return .string(text(statement, index))
        }
    }

    /// Reads column `index` of the current row as a value of SQLite's own type.
    static func column(_ statement: OpaquePointer, _ index: Int32) -> Value {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_NULL: .null
        case SQLITE_INTEGER: .int(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: .double(sqlite3_column_double(statement, index))
        default: .string(text(statement, index))
        }
    }

    static func text(_ statement: OpaquePointer, _ index: Int32) -> String {
        guard let p = sqlite3_column_text(statement, index) else { return "" }
        let n = Int(sqlite3_column_bytes(statement, index))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// Whether column `index` of the current row equals `value`, compared
    /// without allocating.
    static func columnEquals(_ statement: OpaquePointer, _ index: Int32, _ value: Value) -> Bool {
        let type = sqlite3_column_type(statement, index)
        switch value {
        case .null: return type == SQLITE_NULL
        case .bool(let b): return type == SQLITE_INTEGER && (sqlite3_column_int64(statement, index) != 0) == b
        case .int(let i): return type == SQLITE_INTEGER && sqlite3_column_int64(statement, index) == i
        case .double(let d):
            if type == SQLITE_FLOAT { return sqlite3_column_double(statement, index) == d }
            return type == SQLITE_INTEGER && Double(sqlite3_column_int64(statement, index)) == d
        case .string(var s):
            guard type == SQLITE_TEXT else { return false }
            let p = sqlite3_column_text(statement, index)
            let n = Int(sqlite3_column_bytes(statement, index))
            return s.withUTF8 { buf in
                buf.count == n && (n == 0 || memcmp(buf.baseAddress!, p!, n) == 0)
            }
        }
    }

    /// Steps `statement`, throwing the connection's error on failure.
    @discardableResult
    static func step(_ statement: OpaquePointer, _ db: Database) throws -> Bool {
        let rc = sqlite3_step(statement)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
        sqlite3_reset(statement)
        throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: message)
    }
}
