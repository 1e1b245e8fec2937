import GRDB
import GRDBSQLite

/// The processors of an SQLite store (DESIGN §17): `depot_processors` and
/// the batches of each, `depot_processor_batches`, written in saves.
extension SaveContext {
    func insertProcessor(_ spec: ProcessorSpec, created: String, batches: [[String]]) throws -> Bool {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM depot_processors WHERE name = ?", arguments: [spec.name]) != nil {
            return false
        }
        try db.execute(
            sql: "INSERT INTO depot_processors(name, entity, predicate, batch, lease, created, total, done) "
                + "VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
            arguments: [
                spec.name, spec.entity, spec.predicate, spec.batch, spec.leaseSeconds, created,
                batches.reduce(0) { $0 + $1.count }
            ])
        let insert = try db.makeStatement(
            sql:
                "INSERT INTO depot_processor_batches(processor, seq, identifiers, count, state) VALUES (?, ?, ?, ?, 'open')"
        )
        for (seq, ids) in batches.enumerated() {
            try insert.execute(arguments: [spec.name, seq, JSONText.array(ids), ids.count])
        }
        return true
    }

    func leaseBatch(_ processor: String, now: String, until: String, secret: String) throws -> ProcessorNext {
        // The first batch, in order, that is open or whose lease lapsed
        // (docs/api.md; issue 51: every open batch went before a lapsed
        // one): the first of each, found through the state index (the
        // identifiers, a batch's bulk, are read only for the batch handed
        // out), and the earlier of the two.
        let open = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT seq, identifiers FROM depot_processor_batches WHERE processor = ? AND state = 'open' "
                    + "ORDER BY seq LIMIT 1"), arguments: [processor])
        let lapsed = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT seq, identifiers FROM depot_processor_batches WHERE processor = ? "
                    + "AND state = 'leased' AND until < ? ORDER BY seq LIMIT 1"), arguments: [processor, now])
        let found = [open, lapsed].compactMap { $0 }.min { ($0[0] as Int) < ($1[0] as Int) }
        if let row = found {
            let seq: Int = row[0]
            let lease = "\(seq)-\(secret)"
            try db.execute(
                sql: "UPDATE depot_processor_batches SET state = 'leased', lease = ?, until = ? "
                    + "WHERE processor = ? AND seq = ?", arguments: [lease, until, processor, seq])
            return .batch(LeasedBatch(lease: lease, expires: until, identifiers: ProcessorRefusal.identifiers(row[1])))
        }
        if let first = try String.fetchOne(
            db, sql: "SELECT min(until) FROM depot_processor_batches WHERE processor = ? AND state = 'leased'",
            arguments: [processor])
        {
            return .leasedUntil(first)
        }
        return .finished
    }

    func finishBatch(_ lease: ProcessorLease, now: String) throws {
        guard let seq = lease.batch,
            let row = try Row.fetchOne(
                db,
                sql: "SELECT state, lease, until, count FROM depot_processor_batches WHERE processor = ? AND seq = ?",
                arguments: [lease.processor, seq])
        else {
            throw ProcessorRefusal.unknownLease(lease)
        }
        try ProcessorRefusal.check(lease, state: row[0], holder: row[1], until: row[2], now: now)
        try db.execute(
            sql: "UPDATE depot_processor_batches SET state = 'done', lease = NULL, until = NULL "
                + "WHERE processor = ? AND seq = ?", arguments: [lease.processor, seq])
        try db.execute(
            sql: "UPDATE depot_processors SET done = done + ?, last_commit = ? WHERE name = ?",
            arguments: [row[3] as Int, now, lease.processor])
    }

    func deleteProcessor(_ name: String) throws -> Bool {
        try db.execute(sql: "DELETE FROM depot_processor_batches WHERE processor = ?", arguments: [name])
        try db.execute(sql: "DELETE FROM depot_processors WHERE name = ?", arguments: [name])
        return db.changesCount > 0
    }
}

extension StoreReader {
    /// The store's processors with their progress, by name.
    public func processors() async throws -> [ProcessorInfo] {
        let now = Timestamp.now()
        return try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT p.name, p.entity, p.predicate, p.batch, p.lease, p.created, p.total, p.done, p.last_commit,
                        (SELECT count(*) FROM depot_processor_batches WHERE processor = p.name),
                        (SELECT count(*) FROM depot_processor_batches WHERE processor = p.name AND state = 'done'),
                        (SELECT count(*) FROM depot_processor_batches WHERE processor = p.name AND state = 'leased'
                            AND until >= ?)
                    FROM depot_processors AS p ORDER BY p.name
                    """, arguments: [now]
            ).map { r in
                ProcessorInfo(
                    name: r[0], entity: r[1], predicate: r[2], batch: r[3], lease: r[4], created: r[5], total: r[6],
                    done: r[7], batches: r[9], batchesDone: r[10], leased: r[11], lastCommit: r[8])
            }
        }
    }
}
