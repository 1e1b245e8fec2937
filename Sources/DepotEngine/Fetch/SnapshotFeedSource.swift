/// A live fetch's reads of any store (``ResultFeedSource``), written once
/// over its read primitives: each call in one snapshot
/// (``StoreReading/snapshot(_:)``). The changes are the history's
/// (`depot_changes`), so a commit through any host shows. A PostgreSQL
/// store's feeds read this way; an SQLite store's share one snapshot among
/// the streams a commit wakes (``SQLiteFeedSource``).
struct SnapshotFeedSource: ResultFeedSource {
    let reads: any StoreReading
    let query: FetchQuery

    private var storeName: String { reads.schema.name }

    private func newest(_ session: any SQLSession) async throws -> Int64? {
        try await session.scalar("SELECT max(id) FROM \(table: "depot_transactions")")?.integer
    }

    func start() async throws -> (token: Int64?, issued: Int64, records: RecordSet) {
        let (query, dialect) = (query, reads.dialect)
        return try await reads.snapshot { session in
            (
                try await newest(session), try await session.lastIssued(),
                try await query.records(session, dialect)
            )
        }
    }

    func resume(after: Int64) async throws -> [String] {
        let (query, store, dialect) = (query, storeName, reads.dialect)
        return try await reads.snapshot { session in
            try await session.checkAfter(after, store: store)
            return try await query.records(session, dialect).rows.map { row in
                Identifier(query.entity.identifier.map { name in row[query.fields.firstIndex { $0.name == name }!] })
                    .json
            }
        }
    }

    func changes(after: Int64, live: Bool) async throws -> (
        token: Int64, touched: ResultFeed.Touched?, whole: RecordSet?
    ) {
        let (query, store, dialect) = (query, storeName, reads.dialect)
        return try await reads.snapshot { session in
            try await session.checkAfter(after, store: store)
            let token = try await newest(session) ?? after
            // A change to a record that a key path reads can change any
            // record's membership or values: the result is read again whole.
            for entity in query.related.sorted() {
                let changed = try await session.rows(
                    "SELECT 1 FROM \(table: "depot_changes") WHERE txn > \(bind: after) AND entity = \(bind: entity) LIMIT 1"
                )
                if !changed.isEmpty { return (token, nil, try await query.records(session, dialect)) }
            }
            var collected = ResultFeed.TouchedChanges()
            let rows = try await session.rows(
                "SELECT c.identifier, c.kind, c.fields, \(changeSpan: ()) FROM \(table: "depot_changes") c WHERE c.txn > \(bind: after) AND c.entity = \(bind: query.entity.name) ORDER BY c.txn, c.id"
            )
            for row in rows {
                // A run of new records holds their identifiers one a line.
                let text = row[0].text ?? ""
                let identifiers =
                    (row[3].integer ?? 1) > 1
                    ? text.utf8.split(separator: UInt8(ascii: "\n")).map { String(Substring($0)) } : [text]
                for identifier in identifiers {
                    collected.add(identifier: identifier, kind: row[1].text ?? "", fields: row[2].text)
                }
            }
            // Each touched record looked up again with the predicate, with
            // the records it embeds.
            let entity = query.entity
            let idFields = entity.identifierIndexes.map { entity.fields[$0] }
            var found = RecordSet(fields: query.fields, rows: [])
            var records: [ResultFeed.TouchedRecord] = []
            for id in collected.order {
                let identifier = try Identifier(json: id, fieldCount: idFields.count)
                let values = try zip(identifier.values, idFields).map { try ValueConversion.convert($0, to: $1) }
                let one = try await query.records(session, dialect, identifier: values)
                var position: Int?
                if !one.rows.isEmpty {
                    position = found.rows.count
                    found = found.rows.isEmpty ? one : found.appending(one)
                }
                records.append(
                    ResultFeed.TouchedRecord(
                        id: id, identifier: identifier, change: collected.changes[id]!, row: position))
            }
            return (token, ResultFeed.Touched(records: records, found: found), nil)
        }
    }
}
