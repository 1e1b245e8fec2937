import DepotEngine
import PostgresNIO

/// A live fetch's reads of a PostgreSQL store (``ResultFeedSource``): each
/// call in one repeatable-read transaction, one snapshot, as an SQLite
/// store's feed reads in one read transaction. The changes are the
/// history's (`depot_changes`), so a commit through any host shows.
struct PostgresFeedSource: ResultFeedSource {
    let store: PostgresStore
    let query: FetchQuery

    /// Runs `body` in a read-only snapshot, translating errors.
    private func snapshot<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await store.transaction { connection in
                try await PostgresSQL.execute(
                    connection, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY",
                    logger: store.logger)
                return try await body(connection)
            }
        } catch {
            throw store.translate(error)
        }
    }

    /// The query's records, as ``PostgresStore/fetch(_:)`` reads them.
    private func records(_ connection: PostgresConnection) async throws -> RecordSet {
        try await store.records(query, on: connection)
    }

    private func newest(_ connection: PostgresConnection) async throws -> Int64? {
        PostgresSQL.scalar(
            try await PostgresSQL.textRows(
                connection,
                "SELECT max(id)::text FROM "
                    + store.table("depot_transactions"), logger: store.logger)
        ).flatMap { Int64($0) }
    }

    func start() async throws -> (token: Int64?, issued: Int64, records: RecordSet) {
        try await snapshot { connection in
            (try await newest(connection), try await store.lastIssued(connection), try await records(connection))
        }
    }

    func resume(after: Int64) async throws -> [String] {
        try await snapshot { connection in
            try await store.checkHistory(connection, after: after)
            return try await records(connection).rows.map { row in
                Identifier(query.entity.identifier.map { name in row[query.fields.firstIndex { $0.name == name }!] })
                    .json
            }
        }
    }

    func changes(after: Int64, live: Bool) async throws -> (
        token: Int64, touched: ResultFeed.Touched?, whole: RecordSet?
    ) {
        try await snapshot { connection in
            try await store.checkHistory(connection, after: after)
            let token = try await newest(connection) ?? after
            let logger = store.logger
            let changes =
                "SELECT identifier, kind, fields, span::text FROM \(store.table("depot_changes")) "
                + "WHERE txn > $1 AND entity = $2 ORDER BY txn, id"
            // A change to a record that a key path reads can change any
            // record's membership or values: the result is read again whole.
            for entity in query.related.sorted() {
                var binds = PostgresBindings()
                binds.append(after)
                binds.append(entity)
                if !(try await PostgresSQL.textRows(connection, changes + " LIMIT 1", binds, logger: logger)).isEmpty {
                    return (token, nil, try await records(connection))
                }
            }
            var binds = PostgresBindings()
            binds.append(after)
            binds.append(query.entity.name)
            var collected = ResultFeed.TouchedChanges()
            for row in try await PostgresSQL.textRows(connection, changes, binds, logger: logger) {
                // A run of new records holds their identifiers one a line.
                let identifiers =
                    (row[3].flatMap { Int($0) } ?? 1) > 1
                    ? (row[0] ?? "").utf8.split(separator: UInt8(ascii: "\n")).map { String(Substring($0)) }
                    : [row[0] ?? ""]
                for identifier in identifiers {
                    collected.add(identifier: identifier, kind: row[1] ?? "", fields: row[2])
                }
            }
            // Each touched record looked up again with the predicate, with
            // the records it embeds.
            let entity = query.entity
            let idFields = entity.identifierIndexes.map { entity.fields[$0] }
            let first = query.predicate.arguments.count + 1
            let match = idFields.enumerated().map { k, f in "\(PostgresSQL.quote(f.name)) = $\(first + k)" }
                .joined(separator: " AND ")
            var found = RecordSet(fields: query.fields, rows: [])
            var records: [ResultFeed.TouchedRecord] = []
            for id in collected.order {
                let identifier = try Identifier(json: id, fieldCount: idFields.count)
                let values = try zip(identifier.values, idFields).map { try ValueConversion.convert($0, to: $1) }
                let one = try await store.records(query, where: match, extra: values, on: connection)
                var position: Int?
                if !one.rows.isEmpty {
                    position = found.rows.count
                    found = found.rows.isEmpty ? one : found.appending(one)
                }
                records.append(
                    ResultFeed.TouchedRecord(
                        id: id, identifier: identifier, change: collected.changes[id]!,
                        row: position))
            }
            return (token, ResultFeed.Touched(records: records, found: found), nil)
        }
    }
}
