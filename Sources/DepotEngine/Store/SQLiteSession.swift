import Foundation
import GRDB

/// A statement written once for every backend (``SQLStatement``), run on
/// an SQLite connection: `?` placeholders, the system tables by their
/// names, each cell as its storage class gives it.
enum SQLiteSession {
    static func rows(_ db: Database, _ statement: SQLStatement) throws -> [[Value]] {
        let (sql, arguments) = statement.render(SQLiteDialect(), table: { $0 })
        let prepared = try db.cachedStatement(sql: sql)
        try prepared.setArguments(StatementArguments(arguments.map(\.databaseValue)))
        var out: [[Value]] = []
        let cursor = try Row.fetchCursor(prepared)
        while let row = try cursor.next() {
            out.append(
                (0..<row.count).map { i in
                    switch (row[i] as DatabaseValue).storage {
                    case .null: .null
                    case .int64(let n): .int(n)
                    case .double(let d): .double(d)
                    case .string(let s): .string(s)
                    case .blob(let data): .string(String(decoding: data, as: UTF8.self))
                    }
                })
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
