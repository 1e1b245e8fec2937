package import DepotEngine
import Foundation
import Logging
import PostgresNIO

/// A statement written once for every backend (``SQLStatement``), run on a
/// PostgreSQL connection: `$n` placeholders, the store's schema before
/// each system table, each cell decoded by its column's type.
extension PostgresSQL {
    static func rows(
        _ connection: PostgresConnection, _ statement: SQLStatement, store: PostgresStore
    ) async throws -> [[Value]] {
        let (sql, arguments) = statement.render(PostgreSQLDialect(), table: store.table, entityTable: store.table)
        let binds = bindings(arguments)
        let logger = store.logger
        return try await whileOpen(connection) {
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
            var out: [[Value]] = []
            for try await row in rows {
                var values: [Value] = []
                for cell in row { values.append(try value(of: cell)) }
                out.append(values)
            }
            return out
        }
    }

    /// A cell as SQLite would give it: integers, doubles, text (a
    /// timestamp as canonical UTC text, a boolean as 0 or 1), or null.
    static func value(of cell: PostgresCell) throws -> Value {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8: return .int(try cell.decode(Int64.self))
        case .float4, .float8: return .double(try cell.decode(Double.self))
        case .bool: return .int(try cell.decode(Bool.self) ? 1 : 0)
        case .timestamptz, .timestamp:
            let date = try cell.decode(Date.self)
            return .string(Timestamp.format(epochMillis: Int64((date.timeIntervalSince1970 * 1000).rounded())))
        default: return .string(try cell.decode(String.self))
        }
    }
}

extension PostgresSaveContext: SQLSession {
    package func rows(_ statement: SQLStatement) async throws -> [[Value]] {
        try await PostgresSQL.rows(connection, statement, store: store)
    }
}

/// A connection of a PostgreSQL store in a transaction, as the parts of the
/// engine written once use it (``SQLSession``): the history's bookkeeping,
/// a read of the system tables.
// @unchecked: used by the one task that runs its transaction; its connection is dropped when that ends.
package final class PostgresSession: SQLSession, @unchecked Sendable {
    private let store: PostgresStore
    // Set until the transaction ends: a session kept past it must not run statements outside it.
    private var pinned: PostgresConnection?

    init(store: PostgresStore, connection: PostgresConnection) {
        self.store = store
        self.pinned = connection
    }

    func end() { pinned = nil }

    package func rows(_ statement: SQLStatement) async throws -> [[Value]] {
        guard let pinned else {
            throw DepotError(.database, "the transaction is over; nothing of this change was kept")
        }
        return try await PostgresSQL.rows(pinned, statement, store: store)
    }
}
