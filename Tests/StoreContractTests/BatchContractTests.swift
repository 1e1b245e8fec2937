import ChildProcessSupport
import DepotEngine
import DepotPostgres
import Foundation
import Testing

/// Batch updates, deletes and duplicate resolution, with the delete rules
/// of DESIGN §12, through the daemon's store contract on both backends:
/// counters, refusals, records and history, change for change, must equal
/// SQLite's. Records are stored in identifier order, the order in which a
/// PostgreSQL store takes them (an SQLite store takes them as stored).
@Suite("Batch contract: update, delete, dedupe and delete rules on SQLite and PostgreSQL")
struct BatchContractTests {
    /// Customers whose orders cascade, notes that are nullified (an
    /// optional to-one without a declared rule) and tickets that deny (a
    /// required to-one).
    static func shop() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Customer", fields: [Field(name: "id", type: .string), Field(name: "name", type: .string)],
                identifier: ["id"], preserveOnDelete: ["name"], history: .values,
                relationships: [
                    Relationship(
                        name: "orders", target: "Order",
                        kind: .toMany(inverse: "customer", delete: .cascade))
                ]),
            EntityDeclaration(
                name: "Order", fields: [Field(name: "id", type: .string), Field(name: "total", type: .double)],
                identifier: ["id"], history: .values,
                relationships: [Relationship(name: "customer", target: "Customer", kind: .toOne(required: false))]),
            EntityDeclaration(
                name: "Note", fields: [Field(name: "id", type: .int), Field(name: "text", type: .string)],
                identifier: ["id"], history: .fields,
                relationships: [Relationship(name: "about", target: "Customer", kind: .toOne(required: false))]),
            EntityDeclaration(
                name: "Ticket", fields: [Field(name: "id", type: .string)], identifier: ["id"],
                relationships: [Relationship(name: "holder", target: "Customer", kind: .toOne(required: true))])
        ])
    }

    static func load(_ backend: any Backend) async throws {
        func write(_ entity: String, _ columns: [String], _ rows: [[Value]]) async throws {
            var batch = RecordBatch(entity: entity, columns: columns)
            for row in rows { batch.append(row) }
            _ = try await backend.write(batch)
        }
        try await write("Customer", ["id", "name"], [["c1", "Ada"], ["c2", "Bo"], ["c3", "Cy"], ["c4", "Di"]])
        try await write(
            "Order", ["id", "total", "customer"],
            [["o1", 10.0, "c1"], ["o2", 20.0, "c1"], ["o3", 30.0, "c2"], ["o4", 40.0, nil], ["o5", 50.0, "c4"]])
        try await write("Note", ["id", "text", "about"], [[1, "call back", "c1"], [2, "vip", "c3"], [3, "misc", nil]])
        try await write("Ticket", ["id", "holder"], [["k1", "c3"]])
    }

    /// Every record of every entity, and every change after the load.
    static func state(_ backend: any Backend, after: HistoryToken?) async throws -> [String] {
        var out: [String] = []
        for entity in ["Customer", "Order", "Note", "Ticket"] {
            out.append("\(entity): \(try await backend.records(entity))")
        }
        let history = try await backend.contract.reads.history(after: after, entity: nil, author: nil, limit: 1_000)
        for t in history {
            out.append(
                "txn \(t.author): "
                    + t.changes.map { c in
                        "\(c.kind.rawValue) \(c.entity) \(c.identifier) \(c.fields ?? []) t=\(c.tombstone ?? "-") "
                            + "o=\(c.old ?? "-") n=\(c.new ?? "-")"
                    }.joined(separator: " | "))
        }
        return out
    }

    static func describe(_ c: WriteCounts) -> String {
        "ins \(c.inserted) upd \(c.updated) unch \(c.unchanged) del \(c.deleted) rej \(c.rejections.count)"
    }

    /// The script's outcomes, then the state it leaves.
    static func script(_ backend: any Backend) async throws -> [String] {
        try await load(backend)
        let start = try await backend.contract.reads.latestToken()
        let store = backend.contract
        var out: [String] = []
        func step(_ name: String, _ body: () async throws -> WriteCounts) async {
            do {
                out.append("\(name): " + describe(try await body()))
            } catch let error as DepotError {
                out.append("\(name): \(error.code) \(error.message)")
            } catch {
                out.append("\(name): \(error)")
            }
        }
        await step("update totals in pages of 2") {
            try await store.update(
                entity: "Order", where: "total >= $min", arguments: ["min": 20], set: ["total": 25.0],
                author: "u1", job: nil, batchSize: 2, progress: nil)
        }
        await step("update again: unchanged") {
            try await store.update(
                entity: "Order", where: "total == 25", arguments: [:], set: ["total": 25.0],
                author: "u2", job: nil, batchSize: 2, progress: nil)
        }
        await step("move o4 to a missing customer") {
            try await store.update(
                entity: "Order", where: "id == 'o4'", arguments: [:], set: ["customer": "c9"],
                author: "u3", job: nil, batchSize: nil, progress: nil)
        }
        await step("move o4 to c2") {
            try await store.update(
                entity: "Order", where: "id == 'o4'", arguments: [:], set: ["customer": "c2"],
                author: "u4", job: nil, batchSize: nil, progress: nil)
        }
        await step("update the identifier") {
            try await store.update(
                entity: "Order", where: nil, arguments: [:], set: ["id": "x"],
                author: "u5", job: nil, batchSize: nil, progress: nil)
        }
        await step("delete c3, held by a ticket: denied, nothing kept") {
            try await store.delete(
                entity: "Customer", where: "name IN {'Ada', 'Cy'}", arguments: [:],
                author: "d1", job: nil, batchSize: nil, progress: nil)
        }
        await step("delete c1: its orders cascade, its note is nullified") {
            try await store.delete(
                entity: "Customer", where: "id == 'c1'", arguments: [:],
                author: "d2", job: nil, batchSize: nil, progress: nil)
        }
        await step("delete cheap orders in pages of 1") {
            try await store.delete(
                entity: "Order", where: "total < 30 AND customer == nil", arguments: [:],
                author: "d3", job: nil, batchSize: 1, progress: nil)
        }
        await step("dedupe orders by total, keep first") {
            try await store.resolveDuplicates(
                entity: "Order", by: ["total"], keep: .keepFirst, where: nil, arguments: [:],
                author: "x1", job: nil, batchSize: 1, progress: nil)
        }
        await step("dedupe customers by nothing") {
            try await store.resolveDuplicates(
                entity: "Customer", by: [], keep: .keepLast, where: nil, arguments: [:],
                author: "x2", job: nil, batchSize: nil, progress: nil)
        }
        return out + (try await state(backend, after: start))
    }

    @Test("one script of batch writes gives the same counters, refusals, records and history on each backend")
    func script() async throws {
        let answers = try await Backends.answers(entities: Self.shop(), Self.script)
        for (name, out) in answers {
            // Worked out by hand.
            #expect(out[0] == "update totals in pages of 2: ins 0 upd 4 unch 0 del 0 rej 0", "\(name): \(out)")
            #expect(out[1] == "update again: unchanged: ins 0 upd 0 unch 4 del 0 rej 0", "\(name): \(out)")
            #expect(out[2].contains(#"invalid_argument no Customer with identifier "c9""#), "\(name): \(out)")
            #expect(out[3] == "move o4 to c2: ins 0 upd 1 unch 0 del 0 rej 0", "\(name): \(out)")
            #expect(out[4].contains("invalid_argument"), "\(name): \(out)")
            #expect(out[5].contains("conflict cannot delete Customer \"c3\""), "\(name): \(out)")
            // c1, its two orders; its note's reference set to null.
            #expect(
                out[6] == "delete c1: its orders cascade, its note is nullified: ins 0 upd 1 unch 0 del 3 rej 0",
                "\(name): \(out)")
            #expect(out[7] == "delete cheap orders in pages of 1: ins 0 upd 0 unch 0 del 0 rej 0", "\(name): \(out)")
            // o3, o4, o5 hold 25, 25 and 25 → o4 and o5 go.
            #expect(out[8] == "dedupe orders by total, keep first: ins 0 upd 0 unch 0 del 2 rej 0", "\(name): \(out)")
            #expect(out[9].contains("invalid_argument"), "\(name): \(out)")
            #expect(out.contains { $0.hasPrefix("Order: [[\"o3\", 25.0, \"c2\"]]") }, "\(name): \(out)")
            // The history after the load, in commit order: two pages of the
            // first update, the move, the cascade, the two dedupe saves.
            #expect(
                out.filter { $0.hasPrefix("txn ") }.map { String($0.prefix(6)) }
                    == ["txn u1", "txn u1", "txn u4", "txn d2", "txn x1", "txn x1"], "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }
}
