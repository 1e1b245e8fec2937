import DepotEngine
import DepotWire
import Foundation
import Testing

/// Reverts (DESIGN §17) through the store contract on both backends: a
/// transaction or a job taken back, cascades and nullified references
/// restored, conflicts under skip, fail and force, refusals; the records,
/// rejects and history must be the same text on each backend, and a revert
/// stopped between its saves resumes and takes every change back once.
@Suite("Revert contract: transactions and jobs taken back on SQLite and PostgreSQL")
struct RevertContractTests {
    static func shop() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Customer", fields: [Field(name: "id", type: .string), Field(name: "name", type: .string)],
                identifier: ["id"], history: .values,
                relationships: [
                    Relationship(name: "orders", target: "Order", kind: .toMany(inverse: "customer", delete: .cascade))
                ]),
            EntityDeclaration(
                name: "Order", fields: [Field(name: "id", type: .string), Field(name: "total", type: .double)],
                identifier: ["id"], history: .values,
                relationships: [Relationship(name: "customer", target: "Customer", kind: .toOne(required: false))]),
            EntityDeclaration(
                name: "Note", fields: [Field(name: "id", type: .int), Field(name: "text", type: .string)],
                identifier: ["id"], history: .values,
                relationships: [Relationship(name: "about", target: "Customer", kind: .toOne(required: false))]),
            EntityDeclaration(
                name: "Tag", fields: [Field(name: "id", type: .string)], identifier: ["id"], history: .fields)
        ])
    }

    static func load(_ backend: any Backend) async throws {
        func write(_ entity: String, _ columns: [String], _ rows: [[Value]]) async throws {
            var batch = RecordBatch(entity: entity, columns: columns)
            for row in rows { batch.append(row) }
            _ = try await backend.write(batch)
        }
        try await write("Customer", ["id", "name"], [["c1", "Ada"], ["c2", "Bo"]])
        try await write(
            "Order", ["id", "total", "customer"],
            [["o1", 10.0, "c1"], ["o2", 20.0, "c1"], ["o3", 30.0, "c2"], ["o4", 40.0, nil]])
        try await write("Note", ["id", "text", "about"], [[1, "call back", "c1"], [2, "misc", nil]])
        try await write("Tag", ["id"], [["t1"]])
    }

    static func records(_ backend: any Backend) async throws -> String {
        var out: [String] = []
        for entity in ["Customer", "Order", "Note"] { out.append("\(entity) \(try await backend.records(entity))") }
        return out.joined(separator: "; ")
    }

    static func script(_ backend: any Backend) async throws -> [String] {
        try await load(backend)
        let store = backend.contract
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("revert-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var out: [String] = []
        var steps = 0
        func latest() async throws -> HistoryToken { try await store.reads.latestToken()! }
        func revert(_ name: String, _ target: RevertTarget, _ policy: RevertConflictPolicy = .skip) async {
            steps += 1
            let rejects = "\(folder)/\(steps).ndjson"
            do {
                let c = try await store.revert(
                    target, onConflict: policy, author: "revert:\(steps)", batchSize: 2, rejectsPath: rejects)
                let lines = (try? String(contentsOfFile: rejects, encoding: .utf8)) ?? ""
                out.append(
                    "\(name): ins \(c.inserted) upd \(c.updated) del \(c.deleted) unch \(c.unchanged) "
                        + "rej \(c.rejected) \(lines.split(separator: "\n").joined(separator: " ")) | "
                        + (try await records(backend)))
            } catch let error as DepotError {
                out.append("\(name): \(error.code) \(error.message)")
            } catch {
                out.append("\(name): \(error)")
            }
        }
        let loaded = try await records(backend)
        try await store.update(entity: "Order", where: "total >= 20", set: ["total": 25.0], author: "u")
        let raised = try await latest()
        await revert("an update", .token(raised))
        // c1 goes: its orders cascade, its note's reference is nullified; all come back.
        try await store.delete(entity: "Customer", where: "id == 'c1'", author: "d")
        await revert("a delete with its cascades", .token(try await latest()))
        out.append("as loaded: \(try await records(backend) == loaded)")
        // An insert taken back.
        var batch = RecordBatch(entity: "Customer", columns: ["id", "name"])
        batch.append(["c9", "Cy"])
        _ = try await backend.write(batch)
        await revert("an insert", .token(try await latest()))
        // Changed again since, in the same field: a conflict.
        try await store.update(entity: "Order", where: "id == 'o3'", set: ["total": 35.0], author: "a")
        let first = try await latest()
        try await store.update(entity: "Order", where: "id == 'o3'", set: ["total": 36.0], author: "b")
        await revert("changed since: skip", .token(first))
        await revert("changed since: fail", .token(first), .fail)
        await revert("changed since: force", .token(first), .force)
        // A job's transactions, newest first.
        try await store.update(
            entity: "Order", where: "total < 100", set: [:], compute: ["total": "total + 1"], author: "job",
            job: "j1", batchSize: 1)
        await revert("a job's transactions", .job("j1"))
        // Refused.
        await revert("a token never issued", .token(HistoryToken(999)))
        await revert("a place inside a transaction", .token(HistoryToken(raised.id, change: 1)))
        await revert("a job that saved nothing", .job("none"))
        var tag = RecordBatch(entity: "Tag", columns: ["id"])
        tag.append(["t2"])
        _ = try await backend.write(tag)
        await revert("an entity without values", .token(try await latest()))
        _ = try await store.pruneHistory(before: raised)
        await revert("a pruned token", .token(HistoryToken(raised.id - 1)))
        // The reverts' changes as the history shows them, by revert (a job's
        // saves take records in the backend's order: sorted here).
        var changes: [String: [String]] = [:]
        for t in try await store.reads.history(after: raised, entity: nil, author: nil, limit: 1_000)
        where t.author.hasPrefix("revert:") {
            changes[t.author, default: []] += t.changes.map {
                "\($0.kind.rawValue) \($0.entity) \($0.identifier) o=\($0.old ?? "-") n=\($0.new ?? "-")"
            }
        }
        for (author, list) in changes.sorted(by: { $0.key < $1.key }) {
            out.append("\(author): " + list.sorted().joined(separator: " | "))
        }
        return out
    }

    @Test("one script of reverts gives the same counts, rejects, records and history on each backend")
    func script() async throws {
        let answers = try await Backends.answers(
            entities: Self.shop(), extra: [Backends.sqliteRecordByRecord], Self.script)
        for (name, out) in answers {
            // Worked out by hand.
            #expect(out[0].hasPrefix("an update: ins 0 upd 3 del 0 unch 0 rej 0"), "\(name): \(out[0])")
            #expect(
                out[0].contains(#"["o2", 20.0, "c1"], ["o3", 30.0, "c2"], ["o4", 40.0, nil]"#), "\(name): \(out[0])")
            // c1, o1, o2 inserted again; the note's reference set back.
            #expect(
                out[1].hasPrefix("a delete with its cascades: ins 3 upd 1 del 0 unch 0 rej 0"), "\(name): \(out[1])")
            #expect(out[2] == "as loaded: true", "\(name): \(out[2])")
            #expect(out[3].hasPrefix("an insert: ins 0 upd 0 del 1 unch 0 rej 0"), "\(name): \(out[3])")
            #expect(
                out[4].hasPrefix(
                    #"changed since: skip: ins 0 upd 0 del 0 unch 0 rej 1 {"entity":"Order","identifier":"o3","kind":"update","reason":"changed since in \"total\""}"#
                ), "\(name): \(out[4])")
            #expect(out[4].contains(#"["o3", 36.0, "c2"]"#), "\(name): \(out[4])")
            #expect(
                out[5].hasPrefix("changed since: fail: conflict Order \"o3\": changed since in \"total\""),
                "\(name): \(out[5])")
            #expect(out[6].hasPrefix("changed since: force: ins 0 upd 1 del 0 unch 0 rej 0"), "\(name): \(out[6])")
            #expect(out[6].contains(#"["o3", 30.0, "c2"]"#), "\(name): \(out[6])")
            #expect(out[7].hasPrefix("a job's transactions: ins 0 upd 4 del 0 unch 0 rej 0"), "\(name): \(out[7])")
            #expect(
                out[7].contains(
                    #"Order [["o1", 10.0, "c1"], ["o2", 20.0, "c1"], ["o3", 30.0, "c2"], ["o4", 40.0, nil]]"#),
                "\(name): \(out[7])")
            #expect(out[8].hasPrefix("a token never issued: invalid_token"), "\(name): \(out[8])")
            #expect(out[9].hasPrefix("a place inside a transaction: invalid_token"), "\(name): \(out[9])")
            #expect(out[10].hasPrefix("a job that saved nothing: invalid_argument"), "\(name): \(out[10])")
            #expect(out[11].contains("entity \"Tag\" keeps no values"), "\(name): \(out[11])")
            #expect(out[12].hasPrefix("a pruned token: history_expired"), "\(name): \(out[12])")
            #expect(out.contains { $0.hasPrefix("revert:1: update Order") }, "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out.count == answers[0].1.count, "\(name): \(out.count) lines")
            for (a, b) in zip(out, answers[0].1) where a != b {
                Issue.record("\(name) differs from \(answers[0].0):\n\(a)\n\(b)")
            }
        }
    }

    /// A revert of a 9-record job stopped after its first save, run again:
    /// each change taken back once.
    static func resumed(_ backend: any Backend) async throws -> [String] {
        var batch = RecordBatch(entity: "Order", columns: ["id", "total"])
        for i in 1...9 { batch.append([.string("o\(i)"), .double(Double(i))]) }
        _ = try await backend.write(batch)
        let store = backend.contract
        try await store.update(
            entity: "Order", where: nil, set: [:], compute: ["total": "total * 10"], author: "job", job: "j1",
            batchSize: 4)
        @Sendable func run(stopAfter records: Int?) async throws -> WriteCounts {
            try await stopping(at: records, counting: { $0.updated }) {
                try await store.revert(.job("j1"), author: "revert:j1", job: "r1", batchSize: 2, progress: $0)
            }
        }
        var out: [String] = []
        do {
            _ = try await run(stopAfter: 2)
            out.append("not stopped")
        } catch is CancellationError {
            out.append("stopped")
        }
        let counts = try await run(stopAfter: nil)
        out.append("resumed: upd \(counts.updated)")
        out.append("\(try await backend.records("Order").map { $0[1] })")
        let reverted = try await backend.history().filter { $0.author == "revert:j1" }.flatMap(\.changes)
        out.append("changes \(reverted.count), records \(Set(reverted.map(\.identifier)).count)")
        return out
    }

    @Test("a revert stopped between saves resumes and takes every change back once")
    func resume() async throws {
        let answers = try await Backends.answers(entities: Self.shop(), Self.resumed)
        for (name, out) in answers {
            #expect(out[0] == "stopped", "\(name): \(out)")
            #expect(out[1] == "resumed: upd 9", "\(name): \(out)")
            #expect(out[2] == "\((1...9).map { Value.double(Double($0)) })", "\(name): \(out)")
            #expect(out[3] == "changes 9, records 9", "\(name): \(out)")
        }
    }
}
