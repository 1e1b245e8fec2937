public import DepotEngine
import Foundation
import PostgresNIO

/// The processors of a PostgreSQL store (DESIGN §17), as an SQLite store
/// keeps them: saves of any host write them one after the other (the
/// store's save lock).
extension PostgresSaveContext {
    private func run(_ sql: String, _ values: [Value]) async throws -> [[String?]] {
        try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings(values), logger: store.logger)
    }

    public func insertProcessor(_ spec: ProcessorSpec, created: String, batches: [[String]]) async throws -> Bool {
        let processors = store.table("depot_processors")
        let inserted = try await run(
            "INSERT INTO \(processors)(name, entity, predicate, batch, lease, created, total, done) "
                + "VALUES ($1, $2, $3, $4, $5, $6, $7, 0) ON CONFLICT (name) DO NOTHING RETURNING name",
            [
                .string(spec.name), .string(spec.entity), spec.predicate.map(Value.string) ?? .null,
                .int(Int64(spec.batch)),
                .double(spec.leaseSeconds),
                .string(created), .int(Int64(batches.reduce(0) { $0 + $1.count }))
            ])
        guard !inserted.isEmpty else { return false }
        // A few hundred batches a statement.
        var seq = 0
        for chunk in stride(from: 0, to: batches.count, by: 200).map({
            Array(batches[$0..<min($0 + 200, batches.count)])
        }) {
            var values: [Value] = [.string(spec.name)]
            var rows: [String] = []
            for ids in chunk {
                values.append(.int(Int64(seq)))
                values.append(.string(JSONText.array(ids)))
                values.append(.int(Int64(ids.count)))
                let n = values.count
                rows.append("($1, $\(n - 2), $\(n - 1), $\(n), 'open')")
                seq += 1
            }
            _ = try await run(
                "INSERT INTO \(store.table("depot_processor_batches"))(processor, seq, identifiers, count, state) VALUES "
                    + rows.joined(separator: ", "), values)
        }
        return true
    }

    public func leaseBatch(_ processor: String, now: String, until: String, secret: String) async throws
        -> ProcessorNext
    {
        let batches = store.table("depot_processor_batches")
        // The first batch, in order, that is open or whose lease lapsed: the
        // first of each, and the earlier of the two (as on SQLite).
        let open = try await run(
            "SELECT seq::text, identifiers FROM \(batches) WHERE processor = $1 AND state = 'open' ORDER BY seq LIMIT 1",
            [.string(processor)])
        let lapsed = try await run(
            "SELECT seq::text, identifiers FROM \(batches) WHERE processor = $1 AND state = 'leased' "
                + "AND until < $2 ORDER BY seq LIMIT 1", [.string(processor), .string(now)])
        let found = (open + lapsed).min { (Int($0[0] ?? "") ?? .max) < (Int($1[0] ?? "") ?? .max) }.map { [$0] } ?? []
        if let row = found.first, let seq = row[0].flatMap({ Int($0) }) {
            let lease = "\(seq)-\(secret)"
            _ = try await run(
                "UPDATE \(batches) SET state = 'leased', lease = $1, until = $2 WHERE processor = $3 AND seq = $4",
                [.string(lease), .string(until), .string(processor), .int(Int64(seq))])
            return .batch(
                LeasedBatch(lease: lease, expires: until, identifiers: ProcessorRefusal.identifiers(row[1] ?? "[]")))
        }
        if let first = try await run(
            "SELECT min(until) FROM \(batches) WHERE processor = $1 AND state = 'leased'", [.string(processor)]
        ).first?[0] {
            return .leasedUntil(first)
        }
        return .finished
    }

    public func finishBatch(_ lease: ProcessorLease, now: String) async throws {
        let batches = store.table("depot_processor_batches")
        guard let seq = lease.batch,
            let row = try await run(
                "SELECT state, lease, until, count::text FROM \(batches) WHERE processor = $1 AND seq = $2",
                [.string(lease.processor), .int(Int64(seq))]
            ).first
        else {
            throw ProcessorRefusal.unknownLease(lease)
        }
        try ProcessorRefusal.check(lease, state: row[0] ?? "", holder: row[1], until: row[2], now: now)
        _ = try await run(
            "UPDATE \(batches) SET state = 'done', lease = NULL, until = NULL WHERE processor = $1 AND seq = $2",
            [.string(lease.processor), .int(Int64(seq))])
        _ = try await run(
            "UPDATE \(store.table("depot_processors")) SET done = done + $1, last_commit = $2 WHERE name = $3",
            [.int(Int64(row[3].flatMap { Int($0) } ?? 0)), .string(now), .string(lease.processor)])
    }

    public func deleteProcessor(_ name: String) async throws -> Bool {
        _ = try await run("DELETE FROM \(store.table("depot_processor_batches")) WHERE processor = $1", [.string(name)])
        return
            !(try await run(
                "DELETE FROM \(store.table("depot_processors")) WHERE name = $1 RETURNING name", [.string(name)]
            ).isEmpty)
    }
}

extension PostgresStore {
    /// The store's processors with their progress, by name.
    public nonisolated func processors() async throws -> [ProcessorInfo] {
        let p = table("depot_processors"), b = table("depot_processor_batches")
        let sql = """
            SELECT p.name, p.entity, p.predicate, p.batch::text, p.lease::text, p.created, p.total::text, p.done::text,
                p.last_commit,
                (SELECT count(*) FROM \(b) WHERE processor = p.name)::text,
                (SELECT count(*) FROM \(b) WHERE processor = p.name AND state = 'done')::text,
                (SELECT count(*) FROM \(b) WHERE processor = p.name AND state = 'leased' AND until >= $1)::text
            FROM \(p) AS p ORDER BY p.name COLLATE "C"
            """
        let now = Timestamp.now()
        return try await read { connection in
            try await PostgresSQL.textRows(connection, sql, PostgresSQL.bindings([.string(now)]), logger: logger).map {
                r in
                func int(_ i: Int) -> Int { r[i].flatMap { Int($0) } ?? 0 }
                return ProcessorInfo(
                    name: r[0] ?? "", entity: r[1] ?? "", predicate: r[2], batch: int(3),
                    lease: r[4].flatMap { Double($0) } ?? 30, created: r[5] ?? "", total: int(6), done: int(7),
                    batches: int(9), batchesDone: int(10), leased: int(11), lastCommit: r[8])
            }
        }
    }
}
