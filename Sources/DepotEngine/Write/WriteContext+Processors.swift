package import Foundation

/// The processors of a store (DESIGN §17), written once over the save's
/// SQL (``SQLSession``): `depot_processors`, and the batches of each,
/// `depot_processor_batches`. Saves of a store, on any host, run one after
/// the other, so a lease is handed out once.
extension WriteContext {
    /// Keeps a new processor and its batches (each its identifiers' JSON);
    /// false when the name is taken.
    package func insertProcessor(_ spec: ProcessorSpec, created: Date, batches: [[String]]) async throws -> Bool {
        let total = batches.reduce(0) { $0 + $1.count }
        let inserted = try await rows(
            """
            INSERT INTO \(table: "depot_processors")(name, entity, predicate, batch, lease, created, total, done) \
            VALUES (\(bind: spec.name), \(bind: spec.entity), \(bind: spec.predicate), \(bind: spec.batch), \
            \(bind: spec.leaseSeconds), \(bind: Timestamp.format(created)), \(bind: total), 0) \
            ON CONFLICT (name) DO NOTHING RETURNING name
            """)
        guard !inserted.isEmpty else { return false }
        // A few hundred batches a statement.
        for start in stride(from: 0, to: batches.count, by: 200) {
            var statement: SQLStatement =
                "INSERT INTO \(table: "depot_processor_batches")(processor, seq, identifiers, count, state) VALUES "
            for seq in start..<min(start + 200, batches.count) {
                let ids = batches[seq]
                statement =
                    statement + (seq > start ? ", " : "")
                    + "(\(bind: spec.name), \(bind: seq), \(bind: JSONText.array(ids)), \(bind: ids.count), "
                    + "\(bind: BatchState.open.rawValue))"
            }
            try await execute(statement)
        }
        return true
    }

    /// Hands out the first batch of `info`'s processor (read in this save)
    /// not committed whose lease (if any) lapsed before `now`, under lease
    /// `SEQ-secret` for the processor's lease from `now`.
    package func leaseBatch(_ info: ProcessorInfo, now date: Date, secret: String) async throws -> ProcessorNext {
        let processor = info.name
        let now = Timestamp.format(date)
        let expires = date + ProgressTicker.seconds(info.lease)
        let until = Timestamp.format(expires)
        // The first batch, in order, that is open or whose lease lapsed
        // (docs/api.md; issue 51: every open batch went before a lapsed
        // one): the first of each, found through the state index (the
        // identifiers, a batch's bulk, are read only for the batch handed
        // out), and the earlier of the two.
        let batches = "depot_processor_batches"
        let open = try await rows(
            """
            SELECT seq FROM \(table: batches) WHERE processor = \(bind: processor) \
            AND state = \(bind: BatchState.open.rawValue) ORDER BY seq LIMIT 1
            """
        ).first?.first?.integer
        let lapsed = try await rows(
            """
            SELECT seq FROM \(table: batches) WHERE processor = \(bind: processor) \
            AND state = \(bind: BatchState.leased.rawValue) AND until < \(bind: now) ORDER BY seq LIMIT 1
            """
        ).first?.first?.integer
        if let seq = [open, lapsed].compactMap({ $0 }).min() {
            let lease = "\(seq)-\(secret)"
            let identifiers = try await rows(
                """
                UPDATE \(table: batches) SET state = \(bind: BatchState.leased.rawValue), lease = \(bind: lease), \
                until = \(bind: until) WHERE processor = \(bind: processor) AND seq = \(bind: seq) RETURNING identifiers
                """
            ).first?.first?.text
            return .batch(
                LeasedBatch(
                    lease: lease, expires: Timestamp.date(until) ?? expires,
                    identifiers: ProcessorRefusal.identifiers(identifiers ?? "[]")))
        }
        if let first = try await scalar(
            """
            SELECT min(until) FROM \(table: batches) WHERE processor = \(bind: processor) \
            AND state = \(bind: BatchState.leased.rawValue)
            """)?.text
        {
            return .leasedUntil(Timestamp.date(first) ?? date)
        }
        return .finished
    }

    /// Marks the batch of `lease` committed, in this save; the number of
    /// its records.
    ///
    /// - Throws: ``DepotError/Code/conflict`` for a lease that is not the
    ///   batch's now (lapsed, replaced, committed already, never given).
    @discardableResult
    package func finishBatch(_ lease: ProcessorLease, now date: Date) async throws -> Int {
        let batches = "depot_processor_batches"
        let now = Timestamp.format(date)
        guard let seq = lease.batch,
            let row = try await rows(
                """
                SELECT state, lease, until, count FROM \(table: batches) \
                WHERE processor = \(bind: lease.processor) AND seq = \(bind: seq)
                """
            ).first
        else {
            throw ProcessorRefusal.unknownLease(lease)
        }
        try ProcessorRefusal.check(
            lease, state: row[0].text.flatMap(BatchState.init(rawValue:)), holder: row[1].text, until: row[2].text,
            now: now)
        try await execute(
            """
            UPDATE \(table: batches) SET state = \(bind: BatchState.done.rawValue), lease = NULL, until = NULL \
            WHERE processor = \(bind: lease.processor) AND seq = \(bind: seq)
            """)
        try await execute(
            """
            UPDATE \(table: "depot_processors") SET done = done + \(bind: row[3].integer ?? 0), \
            last_commit = \(bind: now) WHERE name = \(bind: lease.processor)
            """)
        return Int(row[3].integer ?? 0)
    }

    /// The processor called `name` with its progress, as this save sees it
    /// at `now`; nil when there is none.
    package func processor(named name: String, now: Date) async throws -> ProcessorInfo? {
        try await rows(ProcessorRows.select(named: name, now: now)).first.map(ProcessorRows.info)
    }

    /// Drops a processor and its batches; false when there is none.
    package func deleteProcessor(_ name: String) async throws -> Bool {
        try await execute("DELETE FROM \(table: "depot_processor_batches") WHERE processor = \(bind: name)")
        return !(try await rows("DELETE FROM \(table: "depot_processors") WHERE name = \(bind: name) RETURNING name"))
            .isEmpty
    }
}

/// Where a processor's batch is (`depot_processor_batches.state`).
package enum BatchState: String, Sendable {
    /// Not handed out yet, or given back.
    case open
    /// Handed out under a lease, until it lapses.
    case leased
    /// Committed: its changes are saved.
    case done
}

extension StoreReading {
    /// The store's processors with their progress, by name; only the one
    /// called `name` when it is given.
    package func processors(named name: String? = nil) async throws -> [ProcessorInfo] {
        try await rows(ProcessorRows.select(named: name, now: Date())).map(ProcessorRows.info)
    }
}

/// The processors' rows with their progress, in one statement: for the
/// reads of `GET …/processors` and for a save's `next` and `commit`, which
/// read their processor once, in their transaction.
enum ProcessorRows {
    static func select(named name: String?, now: Date) -> SQLStatement {
        let batches = "depot_processor_batches"
        var statement: SQLStatement = """
            SELECT p.name, p.entity, p.predicate, p.batch, p.lease, p.created, p.total, p.done, p.last_commit, \
            (SELECT count(*) FROM \(table: batches) WHERE processor = p.name), \
            (SELECT count(*) FROM \(table: batches) WHERE processor = p.name \
            AND state = \(bind: BatchState.done.rawValue)), \
            (SELECT count(*) FROM \(table: batches) WHERE processor = p.name \
            AND state = \(bind: BatchState.leased.rawValue) AND until >= \(bind: Timestamp.format(now))) \
            FROM \(table: "depot_processors") AS p
            """
        if let name { statement = statement + " WHERE p.name = \(bind: name)" }
        return statement + " ORDER BY \(byteOrder: "p.name")"
    }

    static func info(_ r: [Value]) -> ProcessorInfo {
        func int(_ i: Int) -> Int { Int(r[i].integer ?? 0) }
        let created = r[5].text.flatMap(Timestamp.date) ?? Date(timeIntervalSince1970: 0)
        return ProcessorInfo(
            name: r[0].text ?? "", entity: r[1].text ?? "", predicate: r[2].text, batch: int(3),
            lease: .milliseconds(Int64(((r[4].real ?? 30) * 1000).rounded())), created: created, total: int(6),
            done: int(7), batches: int(9), batchesDone: int(10), leased: int(11),
            lastCommit: r[8].text.flatMap(Timestamp.date))
    }
}
