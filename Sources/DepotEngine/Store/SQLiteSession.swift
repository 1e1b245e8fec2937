import Foundation
import GRDB
import GRDBSQLite

/// A statement written once for every backend (``SQLStatement``), run on
/// an SQLite connection: `?` placeholders, the system tables by their
/// names, each cell as its storage class gives it.
enum SQLiteSession {
    static func rows(_ db: Database, _ statement: SQLStatement) throws -> [[Value]] {
        let (sql, arguments) = statement.render(SQLiteDialect(), table: { $0 })
        // The C API on GRDB's cached statement, as the write path does
        // (SQL.swift): these run for every change of a save (its record's
        // version, a reference's check). Through GRDB's arguments and rows,
        // the saves measured 13-15% slower once; this way, no slower than
        // before they were written once (BENCHMARKS.md, "Saves").
        let compiled = try statement.recurs ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql)
        let prepared = compiled.sqliteStatement
        defer {
            withExtendedLifetime(compiled) {}
            sqlite3_reset(prepared)
            sqlite3_clear_bindings(prepared)
        }
        for (i, value) in arguments.enumerated() { SQL.bind(value, to: prepared, at: Int32(i + 1)) }
        let columns = sqlite3_column_count(prepared)
        var out: [[Value]] = []
        while try SQL.step(prepared, db) {
            var row: [Value] = []
            row.reserveCapacity(Int(columns))
            for i in 0..<columns { row.append(SQL.column(prepared, i)) }
            out.append(row)
        }
        return out
    }
}

extension Value {
    /// The value as SQLite stores it (a boolean as 0 or 1).
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .bool(let b): (b ? 1 : 0).databaseValue
        case .int(let i): i.databaseValue
        case .double(let d): d.databaseValue
        case .string(let s): s.databaseValue
        }
    }
}
