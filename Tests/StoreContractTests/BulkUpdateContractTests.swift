import DepotEngine
import DepotWire
import Foundation
import GRDB
import Testing

/// A batch update's chunks written in a few statements (an SQLite store's
/// bulk path) against the same updates written record by record, and
/// against PostgreSQL: the counts, rejects, records, history (its text
/// and each record's own, found by its identifier) must be the same. The
/// identifiers are the hard ones for SQL to write as Swift does: quotes,
/// backslashes, control characters, non-ASCII text, a compound key.
@Suite("Bulk updates: the same as record by record, on SQLite and PostgreSQL")
struct BulkUpdateContractTests {
    static func entities() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Item",
                fields: [
                    Field(name: "id", type: .string), Field(name: "n", type: .int), Field(name: "d", type: .double),
                    Field(name: "b", type: .bool), Field(name: "j", type: .json, isOptional: true),
                    Field(name: "s", type: .string, isOptional: true),
                    Field(name: "day", type: .date, isOptional: true), Field(name: "q", type: .int, isOptional: true)
                ],
                identifier: ["id"], history: .values),
            EntityDeclaration(
                name: "Pair",
                fields: [
                    Field(name: "a", type: .int), Field(name: "k", type: .string), Field(name: "v", type: .double)
                ],
                identifier: ["a", "k"], history: .fields),
            EntityDeclaration(
                name: "Count", fields: [Field(name: "id", type: .int), Field(name: "x", type: .double)],
                identifier: ["id"], history: .values)
        ])
    }

    static let ids = [
        "plain", "quote\"d", "back\\slash", "tab\tnew\nline", "ctl\u{01}\u{1f}", "bell\u{07}ff\u{0c}bs\u{08}",
        "é ünïcødé", "rocket 🚀", "it's", "del\u{7f}", "cr\r", "<&>"
    ]

    /// An item of each identifier of `ids`, and a pair for each of the first `pairs`.
    static func load(_ backend: any Backend, ids: [String], pairs count: Int) async throws {
        var items = RecordBatch(entity: "Item", columns: ["id", "n", "d", "b", "s"])
        for (i, id) in ids.enumerated() {
            items.append([
                .string(id), .int(Int64(i) * 3 - 7), .double(Double(i) * 12.34 + 0.1), .bool(i % 3 == 0),
                i % 4 == 0 ? .string("it's \"q\"\n") : .null
            ])
        }
        _ = try await backend.write(items)
        var pairs = RecordBatch(entity: "Pair", columns: ["a", "k", "v"])
        for i in 0..<count { pairs.append([.int(Int64(i % 2)), .string(ids[i]), .double(Double(i) / 7)]) }
        _ = try await backend.write(pairs)
    }

    static func script(_ backend: any Backend) async throws -> [String] {
        try await load(backend, ids: ids, pairs: 6)
        let start = try await backend.contract.reads.latestToken()
        let store = backend.contract
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bulk-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var out: [String] = []
        var steps = 0
        func step(
            on entity: String = "Item", where predicate: String? = nil, arguments: [String: Value] = [:],
            set: [String: Value] = [:], _ compute: [String: String] = [:]
        ) async {
            steps += 1
            let rejects = "\(folder)/\(steps).ndjson"
            do {
                let c = try await store.update(
                    entity: entity, where: predicate, arguments: arguments, set: set, compute: compute,
                    author: "s\(steps)", batchSize: 4, rejectsPath: rejects)
                // Sorted: a PostgreSQL store takes records in identifier order.
                let lines = (try? String(contentsOfFile: rejects, encoding: .utf8)) ?? ""
                out.append(
                    "\(steps): upd \(c.updated) unch \(c.unchanged) rej \(c.rejected) "
                        + lines.split(separator: "\n").sorted().joined(separator: " "))
            } catch let error as DepotError {
                out.append("\(steps): \(error.code) \(error.message)")
            } catch {
                out.append("\(steps): \(error)")
            }
        }
        await step(["d": "d * 1.1"])
        await step(where: "b == true", ["n": "n + 1"])
        // Constants of every type beside a computed field; some records hold them already.
        let constants: [String: Value] = [
            "b": true, "j": .string(#"{"x": [1, "two"], "y": null}"#), "s": .string("it's \"q\"\n"),
            "day": .string("2025-03-14")
        ]
        await step(where: "n > $low", arguments: ["low": 0], set: constants, ["d": "d / 3"])
        await step(where: "n > $low", arguments: ["low": 0], set: constants)
        await step(["q": "n * 2"])
        // Integers out of range: those chunks go record by record, and their records are rejected.
        await step(["n": "n * 4611686018427387904"])
        await step(["d": "n"])
        await step(where: "d > 10", set: ["s": .null, "j": .null])
        await step(on: "Pair", ["v": "v + a"])
        await step(on: "Pair", where: "a == 1", set: ["v": 0.5])
        await step(set: ["q": .null], ["d": "d * 0.1"])
        // Reverts of jobs: pages of one field's updates (taken back in bulk
        // on SQLite), a page with a record changed since (a conflict: that
        // page goes record by record), pages cut inside a transaction.
        let before = try await backend.records("Item")
        func revert(_ job: String, batchSize: Int) async throws {
            steps += 1
            let rejects = "\(folder)/\(steps).ndjson"
            let c = try await store.revert(
                .job(job), author: "revert \(job)", batchSize: batchSize, rejectsPath: rejects)
            let lines = (try? String(contentsOfFile: rejects, encoding: .utf8)) ?? ""
            out.append(
                "revert \(job): upd \(c.updated) unch \(c.unchanged) rej \(c.rejected) "
                    + lines.split(separator: "\n").sorted().joined(separator: " "))
        }
        try await store.update(
            entity: "Item", where: nil, set: [:], compute: ["d": "d * 3"], author: "a", job: "a", batchSize: 4)
        try await store.update(
            entity: "Item", where: "id == $id", arguments: ["id": "it's"], set: ["d": 1.0], author: "later")
        try await revert("a", batchSize: 3)
        let restored = try await backend.records("Item")
        out.append("restored but the conflict: \(zip(before, restored).filter { $0.0 != $0.1 }.map { $0.0[0] })")
        try await store.update(
            entity: "Item", where: nil, set: ["b": false], compute: ["n": "n - 1"], author: "b", job: "b",
            batchSize: 5)
        try await revert("b", batchSize: 4)
        out.append("restored: \(try await backend.records("Item") == restored)")
        // Integer identifiers, negative ones among them; one record changed since.
        var counts = RecordBatch(entity: "Count", columns: ["id", "x"])
        for i in -5..<7 { counts.append([.int(Int64(i) * 1_000_003), .double(Double(i) / 3)]) }
        _ = try await backend.write(counts)
        let countsBefore = try await backend.records("Count")
        try await store.update(
            entity: "Count", where: nil, set: [:], compute: ["x": "x * 3 + 0.1"], author: "c", job: "c", batchSize: 5)
        try await store.update(entity: "Count", where: "id == 2000006", set: ["x": 9.0], author: "later")
        try await revert("c", batchSize: 4)
        let countsAfter = try await backend.records("Count")
        out.append(
            "counts restored but the conflict: \(zip(countsBefore, countsAfter).filter { $0.0 != $0.1 }.map { $0.0[0] })"
        )
        out.append("Item: \(try await backend.records("Item"))")
        out.append("Pair: \(try await backend.records("Pair"))")
        // Each change with its step, sorted: the backends' orders and saves differ.
        out += try await Self.changes(store, after: start).sorted()
        // Each record's own history, found by its identifier's text.
        for id in ids {
            let own = try await store.reads.recordHistory("Item", identifier: [.string(id)], limit: 100)
            out.append("\(id): \(own.map { "\($0.author) \($0.changes.map { $0.fields ?? [] })" })")
        }
        for i in 0..<6 {
            let own = try await store.reads.recordHistory(
                "Pair", identifier: [.int(Int64(i % 2)), .string(ids[i])], limit: 100)
            out.append("pair \(i): \(own.map { "\($0.author) \($0.changes.map { $0.fields ?? [] })" })")
        }
        return out
    }

    /// Every change after `start`, a line each, in the history's order.
    static func changes(_ store: any StoreBackend, after start: HistoryToken?) async throws -> [String] {
        try await store.reads.history(after: start, entity: nil, author: nil, limit: 1_000).flatMap { t in
            t.changes.map { c in
                "\(t.author): \(c.entity) \(c.identifier) \(c.fields ?? []) o=\(c.old ?? "-") n=\(c.new ?? "-")"
            }
        }
    }

    @Test("the same counts, rejects, records and history as record by record, on each backend")
    func sameAsRecordByRecord() async throws {
        let answers = try await Backends.answers(
            entities: Self.entities(), extra: [Backends.sqliteRecordByRecord], Self.script)
        let out = answers[0].1
        // Worked out by hand: 12 items, b true for 0, 3, 6, 9; n = 3i - 7 (+1
        // where b): -6, -4, -1, 3, 5, 8, 12, 14, 17, 21, 23, 26.
        #expect(out[0] == "1: upd 12 unch 0 rej 0 ", "\(out[0])")
        #expect(out[1] == "2: upd 4 unch 0 rej 0 ", "\(out[1])")
        #expect(out[2].hasPrefix("3: upd 9 unch 0 rej 0"), "\(out[2])")
        #expect(out[3].hasPrefix("4: upd 0 unch 9 rej 0"), "\(out[3])")
        #expect(out[5].hasPrefix("6: upd 1 unch 0 rej 11"), "\(out[5])")
        #expect(out[5].contains("out of the 64-bit range"), "\(out[5])")
        #expect(out[4] == "5: upd 12 unch 0 rej 0 ", "\(out[4])")
        #expect(out[7] == "8: upd 6 unch 0 rej 0 ", "\(out[7])")
        // v + a: unchanged where a is 0.
        #expect(out[8] == "9: upd 3 unch 3 rej 0 ", "\(out[8])")
        // Found by their identifiers: every item changed by step 1, every pair inserted.
        for id in Self.ids {
            #expect(out.contains { $0.hasPrefix("\(id): ") && $0.contains(#"s1 [[\"d\"]]"#) }, "\(id)")
        }
        for i in 0..<6 { #expect(out.contains { $0.hasPrefix("pair \(i): [\"test [[]]\"") }, "pair \(i)") }
        #expect(out.contains { $0.hasPrefix("revert a: upd 11 unch 0 rej 1 {") }, "\(out)")
        #expect(out.contains(#"restored but the conflict: ["it's"]"#), "\(out)")
        #expect(out.contains("revert b: upd 12 unch 0 rej 0 "), "\(out)")
        #expect(out.contains("restored: true"), "\(out)")
        #expect(
            out.contains { $0.hasPrefix("counts restored but the conflict: [") && $0.contains("2000006") }, "\(out)")
        for (name, other) in answers.dropFirst() {
            #expect(other.count == out.count, "\(name)")
            for (a, b) in zip(out, other) { #expect(a == b, "\(name) differs from \(answers[0].0)") }
        }
    }

    /// Computed updates through relationships (a to-one, then a to-many's
    /// aggregate) on both backends and record by record: a record's new
    /// value may read other records of its chunk (here an order reads its
    /// customer's orders), so every value of a chunk is computed before any
    /// of its records is written, and the history logs what was written.
    @Test("computed through relationships: the same as record by record, on each backend")
    func throughRelationships() async throws {
        let answers = try await Backends.answers(
            entities: RevertContractTests.shop(), extra: [Backends.sqliteRecordByRecord]
        ) { backend in
            try await RevertContractTests.load(backend)
            let store = backend.contract
            let start = try await store.reads.latestToken()
            var out: [String] = []
            for (predicate, expression) in [
                ("total < 35", "total + customer.orders.@sum.total"), (nil, "total * 2"),
                ("total > 50", "total - customer.orders.@count")
            ] {
                let c = try await store.update(
                    entity: "Order", where: predicate, set: [:], compute: ["total": expression], author: expression,
                    batchSize: 2)
                out.append("\(expression): upd \(c.updated) unch \(c.unchanged) rej \(c.rejected)")
            }
            return out + [try await RevertContractTests.records(backend)]
                + (try await Self.changes(store, after: start))
        }
        let out = answers[0].1
        // o1, o2 of c1 (10, 20), o3 of c2 (30), o4 of none (40): each
        // chunk's sums read before it is written.
        #expect(out[0] == "total + customer.orders.@sum.total: upd 3 unch 0 rej 0", "\(out)")
        // o2's sum is 10 + 20 though o1, in its chunk, was set to 40 first.
        #expect(
            out.contains(
                #"total + customer.orders.@sum.total: Order "o2" ["total"] o={"total":20.0} n={"total":50.0}"#),
            "\(out)")
        #expect(out[3].contains(#"Order [["o1", 78.0, "c1"], ["o2", 98.0, "c1"], ["o3", 119.0, "c2"]"#), "\(out)")
        for (name, other) in answers.dropFirst() {
            #expect(other == out, "\(name) differs from \(answers[0].0): \(other) against \(out)")
        }
    }

    /// The history in its order, and the identifiers as its rows hold them,
    /// byte for byte; and the bulk path did write: its rows keep the values
    /// as arrays in the order of their fields, the record-by-record path's
    /// as objects (both read back the same).
    @Test("the history, in its order, and its identifiers' bytes are those of record by record")
    func identifierBytes() async throws {
        let (texts, arrays) = try await Self.historyTexts(
            Self.script, raw: "identifier FROM depot_changes WHERE kind = 'update'")
        // Steps 1, 2, 3, 5, 7, 8 and 11 and job a's update and revert pages go in bulk:
        // of the reverts, the pages whose changes all set the same fields,
        // but the conflicts' (job b set `b` only where it was true): 17 of
        // Item's; 9 of Count's 12 (saves of 4 changes over transactions of
        // 2, 5 and 5, newest first; the conflict's page of 3 goes change by change).
        #expect(arrays[0] > 60, "\(arrays)")
        #expect(arrays[1] == 26, "\(arrays)")
        #expect(arrays[2] == 0 && arrays[3] == 0, "\(arrays)")
        #expect(texts[0].count > 60 && texts[1].count > 60)
        #expect(texts[0] == texts[2])
        #expect(texts[1] == texts[3])
    }

    /// Version 8's hint: a change written in bulk keeps its record's rowid,
    /// and a revert finds the record by it only while that rowid holds the
    /// change's identifier; otherwise by the identifier, still in bulk.
    @Test(
        "a revert in bulk finds each record by the rowid its change kept, by its identifier when that rowid holds another record, none, or was not kept"
    )
    func rowidHints() async throws {
        let backend = try await SQLiteBackend(entities: Self.entities(), bulkUpdates: true)
        try await Self.load(backend, ids: Self.ids, pairs: 0)
        let before = try await backend.records("Item")
        let store = backend.contract
        try await store.update(
            entity: "Item", where: nil, set: [:], compute: ["d": "d * 3"], author: "a", job: "a", batchSize: 100)
        let db = try DatabaseQueue(path: backend.folder.appendingPathComponent("s.sqlite").path)
        let job = "SELECT id FROM depot_transactions WHERE job = 'a'"
        // The rowid of the record each change names, found by its identifier's JSON.
        func kept(_ author: String) throws -> Int {
            try db.read {
                try Int.fetchOne(
                    $0,
                    sql: "SELECT count(*) FROM depot_changes AS c JOIN depot_transactions AS x ON x.id = c.txn "
                        + "JOIN Item AS t ON t.rowid = c.rid AND json_quote(t.id) = c.identifier "
                        + "WHERE x.author = ? AND c.old LIKE '[%'", arguments: [author]) ?? 0
            }
        }
        #expect(try kept("a") == Self.ids.count)
        // Made wrong: a neighbour's rowid (the last one's: a rowid no record
        // holds), a rowid far past them all, none.
        let changed = try await db.write {
            try $0.execute(
                sql: "UPDATE depot_changes SET rid = CASE id % 3 WHEN 0 THEN rid + 1 WHEN 1 THEN rid + 1000000 "
                    + "ELSE NULL END WHERE txn IN (\(job))")
            return $0.changesCount
        }
        #expect(changed == Self.ids.count)
        #expect(try kept("a") == 0)
        let c = try await store.revert(.job("a"), author: "revert a", batchSize: 100)
        #expect(c.updated == Self.ids.count && c.rejected == 0 && c.unchanged == 0)
        #expect(try await backend.records("Item") == before)
        // In bulk (values as arrays), each change with its record's rowid.
        #expect(try kept("revert a") == Self.ids.count)
        try db.close()
        await backend.close()
    }

    /// `script` run on an SQLite store with its bulk path and on one
    /// without: for each, the history's changes, then column `raw` of its
    /// rows in their order (`raw` may name a table and a condition); and
    /// how many update rows keep their values as arrays (the bulk path's),
    /// then how many of those a revert wrote: for each store, two counts.
    static func historyTexts(_ script: (any Backend) async throws -> [String], raw: String) async throws
        -> (texts: [[String]], arrays: [Int])
    {
        var texts: [[String]] = []
        var arrays: [Int] = []
        for bulk in [true, false] {
            let backend = try await SQLiteBackend(entities: Self.entities(), bulkUpdates: bulk)
            _ = try await script(backend)
            texts.append(try await Self.changes(backend.contract, after: nil))
            let db = try DatabaseQueue(path: backend.folder.appendingPathComponent("s.sqlite").path)
            let from = raw.contains(" FROM ") ? raw : raw + " FROM depot_changes"
            texts.append(try await db.read { try String.fetchAll($0, sql: "SELECT \(from) ORDER BY id") })
            arrays.append(
                try await db.read {
                    try Int.fetchOne(
                        $0, sql: "SELECT count(*) FROM depot_changes WHERE kind = 'update' AND old LIKE '[%'") ?? 0
                })
            // Of those, the reverts' (their pages taken back in bulk).
            arrays.append(
                try await db.read {
                    try Int.fetchOne(
                        $0,
                        sql: "SELECT count(*) FROM depot_changes AS c JOIN depot_transactions AS t ON t.id = c.txn "
                            + "WHERE t.author LIKE 'revert%' AND c.kind = 'update' AND c.old LIKE '[%'") ?? 0
                })
            try db.close()
            await backend.close()
        }
        return (texts, arrays)
    }
}
