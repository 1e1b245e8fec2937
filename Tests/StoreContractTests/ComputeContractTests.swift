import DepotEngine
import DepotWire
import Foundation
import Synchronization
import Testing

/// Computed updates (DESIGN §17) through the store contract on both
/// backends: the counters, the rejected records with their reasons, the
/// records and the history must be the same text on each; a job stopped
/// between its saves resumes and computes every record exactly once.
@Suite("Compute contract: computed updates on SQLite and PostgreSQL")
struct ComputeContractTests {
    static func trips() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Trip",
                fields: [
                    Field(name: "id", type: .string), Field(name: "destination", type: .string),
                    Field(name: "budget", type: .double), Field(name: "nights", type: .int),
                    Field(name: "qty", type: .int), Field(name: "note", type: .string, isOptional: true),
                    Field(name: "checked", type: .date, isOptional: true)
                ],
                identifier: ["id"], history: .values)
        ])
    }

    static func load(_ backend: any Backend, count: Int? = nil) async throws {
        var batch = RecordBatch(entity: "Trip", columns: ["id", "destination", "budget", "nights", "qty"])
        if let count {
            for i in 1...count {
                batch.append([
                    .string("t\(String(format: "%02d", i))"), "Rome", .double(Double(i) * 10), .int(Int64(i)), 1
                ])
            }
        } else {
            batch.append(["t1", "Paris", 100.0, 3, 2])
            batch.append(["t2", "Rome", 200.0, 4, 3])
            batch.append(["t3", "Paris", 50.0, 1, .int(1 << 62)])
            batch.append(["t4", "Oslo", 80.0, 2, 5])
        }
        _ = try await backend.write(batch)
    }

    /// Every record, and every change after `after`, as text.
    static func state(_ backend: any Backend, after: HistoryToken?) async throws -> [String] {
        var out = ["Trip: \(try await backend.records("Trip"))"]
        for t in try await backend.contract.reads.history(after: after, entity: nil, author: nil, limit: 1_000) {
            out.append(
                "txn \(t.author): "
                    + t.changes.map { c in "\(c.identifier) \(c.fields ?? []) o=\(c.old ?? "-") n=\(c.new ?? "-")" }
                    .joined(separator: " | "))
        }
        return out
    }

    static func script(_ backend: any Backend) async throws -> [String] {
        try await load(backend)
        let start = try await backend.contract.reads.latestToken()
        let store = backend.contract
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("compute-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var out: [String] = []
        var steps = 0
        func step(
            _ name: String, where predicate: String? = nil, set: [String: Value] = [:], _ compute: [String: String]
        )
            async
        {
            steps += 1
            let rejects = "\(folder)/\(steps).ndjson"
            do {
                let c = try await store.update(
                    entity: "Trip", where: predicate, set: set, compute: compute, author: "s\(steps)",
                    batchSize: 2, rejectsPath: rejects)
                let lines = (try? String(contentsOfFile: rejects, encoding: .utf8)) ?? ""
                out.append(
                    "\(name): upd \(c.updated) unch \(c.unchanged) rej \(c.rejected) "
                        + lines.split(separator: "\n").joined(separator: " "))
            } catch let error as DepotError {
                out.append("\(name): \(error.code) \(error.message) @\(error.position.map(String.init) ?? "-")")
            } catch {
                out.append("\(name): \(error)")
            }
        }
        await step("raise Paris budgets", where: "destination == 'Paris'", ["budget": "budget * 1.1"])
        await step(
            "from the old values", ["destination": "uppercase:(destination)", "nights": "nights + length:(destination)"]
        )
        await step("double qty: t3 overflows", ["qty": "qty * 2"])
        await step("quarter qty: not whole numbers are rejected", ["qty": "qty / 4"])
        await step("null into a required field", ["qty": "qty / (nights - nights)"])
        await step("TERNARY into an optional field", ["note": "TERNARY(nights > 7, 'long', nil)"])
        await step("abs of the smallest int", where: "id == 't4'", ["qty": "abs:(-9223372036854775807 - 1)"])
        await step("constants and computations", where: "id == 't2'", set: ["note": "set"], ["budget": "-budget"])
        await step("an unknown field", ["budgte": "1"])
        await step("text into a double", ["budget": "destination"])
        await step("the identifier", ["id": "'x'"])
        await step("always null into a required field", ["qty": "nil"])
        await step("set and computed", set: ["budget": 1.0], ["budget": "2"])
        await step("does not parse", ["budget": "budget * "])
        await step("an unknown function", ["budget": "budget + frobnicate:(budget)"])
        await step("a type error inside", ["nights": "nights + uppercase:(nights)"])
        return out + (try await state(backend, after: start))
    }

    @Test("one script of computed updates gives the same counts, rejects, records and history on each backend")
    func script() async throws {
        let answers = try await Backends.answers(
            entities: Self.trips(), extra: [Backends.sqliteRecordByRecord], Self.script)
        for (name, out) in answers {
            // Worked out by hand.
            #expect(out[0].hasPrefix("raise Paris budgets: upd 2 unch 0 rej 0"), "\(name): \(out[0])")
            #expect(out[1].hasPrefix("from the old values: upd 4 unch 0 rej 0"), "\(name): \(out[1])")
            #expect(
                out[2].hasPrefix(
                    #"double qty: t3 overflows: upd 3 unch 0 rej 1 {"identifier":"t3","field":"qty","reason":"field \"qty\" is int, and the computed value is out of the 64-bit range","value":9.2"#
                ), "\(name): \(out[2])")
            // 4, 6, 2^62 and 10 quartered: 1, 1.5, 2^60, 2.5.
            #expect(
                out[3].hasPrefix("quarter qty: not whole numbers are rejected: upd 2 unch 0 rej 2"),
                "\(name): \(out[3])")
            #expect(out[3].contains(#""identifier":"t2","field":"qty""#), "\(name): \(out[3])")
            #expect(out[4].hasPrefix("null into a required field: upd 0 unch 0 rej 4"), "\(name): \(out[4])")
            #expect(out[4].contains("is required and cannot be set to null"), "\(name): \(out[4])")
            // Nights are 8, 8, 6, 6.
            #expect(out[5].hasPrefix("TERNARY into an optional field: upd 2 unch 2 rej 0"), "\(name): \(out[5])")
            #expect(out[6].hasPrefix("abs of the smallest int: upd 0 unch 0 rej 1"), "\(name): \(out[6])")
            #expect(out[7].hasPrefix("constants and computations: upd 1 unch 0 rej 0"), "\(name): \(out[7])")
            #expect(out[8].contains("unknown_field"), "\(name): \(out[8])")
            #expect(
                out[9].contains(
                    #"type_mismatch compute "budget": field "budget" is double, but the expression gives string"#),
                "\(name): \(out[9])")
            #expect(out[10].contains("invalid_argument"), "\(name): \(out[10])")
            #expect(out[11].contains("is required, and the expression is always null"), "\(name): \(out[11])")
            #expect(out[12].contains("both set and computed"), "\(name): \(out[12])")
            #expect(
                out[13].contains(#"invalid_predicate compute "budget": "#) && out[13].hasSuffix("@10"),
                "\(name): \(out[13])")
            #expect(out[14].contains("unknown function frobnicate:") && out[14].hasSuffix("@10"), "\(name): \(out[14])")
            #expect(
                out[15].contains("uppercase: takes a string, not int") && out[15].hasSuffix("@21"),
                "\(name): \(out[15])")
            #expect(
                out.contains { $0.hasPrefix(#"Trip: [["t1", "PARIS", 110.00000000000001, 8, 1, "long""#) },
                "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }

    /// Computed fetch fields through every read: fetch, JSON, count,
    /// identifiers, export, enumerate and a live feed, with `$arguments` in
    /// both the fields and the predicate.
    static func fetched(_ backend: any Backend) async throws -> [String] {
        try await load(backend)
        let reads = backend.contract.reads
        var d = FetchDescriptor(
            entity: "Trip", where: "nights > $n", arguments: ["n": 1, "cap": 90.0], sort: [.init("id")],
            fields: ["id", "budget"])
        d.computed = [
            ComputedField("daily", "budget / nights"), ComputedField("shout", "uppercase:(destination)"),
            ComputedField("big", "qty * 4"), ComputedField("level", "TERNARY(budget > $cap, 'high', 'low')")
        ]
        var out: [String] = []
        let set = try await reads.fetch(d)
        out.append("fields \(set.fields.map { "\($0.name):\($0.type.rawValue)" }) rows \(set.rows)")
        out.append("json \(try await reads.fetchJSON(d))")
        out.append("count \(try await reads.count(d)) ids \(try await reads.identifiers(d).map(\.json))")
        let exported = Mutex<[UInt8]>([])
        _ = try await reads.export(d, as: .ndjson) { bytes in exported.withLock { $0 += bytes } }
        out.append("export \(String(decoding: exported.withLock { $0 }, as: UTF8.self))")
        var batches: [String] = []
        for try await batch in reads.enumerate(d, batchSize: 1) { batches.append("\(batch.rows)") }
        out.append("enumerate \(batches.sorted())")
        // Only computed fields: with the identifier.
        var only = FetchDescriptor(entity: "Trip", where: "id == 't1'", fields: [])
        only.computed = [ComputedField("twice", "budget * 2")]
        out.append("alone \(try await reads.fetchJSON(only))")
        // A live feed recomputes a changed record.
        let feed = try reads.resultFeed(d)
        let (_, first) = try await feed.start()
        out.append("live \(first.rows)")
        try await backend.contract.update(entity: "Trip", where: "id == 't2'", set: ["budget": 400.0], author: "u")
        let changes = try await feed.changes()
        out.append("changed \(changes.updated.rows)")
        for (name, c) in [
            ("named as a field", ComputedField("budget", "1")), ("no parse", ComputedField("x", "budget +")),
            ("a type error", ComputedField("x", "budget * destination"))
        ] {
            var bad = d
            bad.computed = [c]
            do {
                _ = try await reads.fetch(bad)
                out.append("\(name): no error")
            } catch let error as DepotError {
                out.append("\(name): \(error.code) \(error.message) @\(error.position.map(String.init) ?? "-")")
            }
        }
        return out
    }

    @Test("computed fetch fields give the same values through every read on each backend")
    func fetch() async throws {
        let answers = try await Backends.answers(entities: Self.trips(), Self.fetched)
        for (name, out) in answers {
            #expect(
                out[0]
                    == #"fields ["id:string", "budget:double", "daily:double", "shout:string", "big:int", "level:string"] rows [["t1", 100.0, 33.333333333333336, "PARIS", 8, "high"], ["t2", 200.0, 50.0, "ROME", 12, "high"], ["t4", 80.0, 40.0, "OSLO", 20, "low"]]"#,
                "\(name): \(out[0])")
            #expect(
                out[1]
                    == #"json [{"id":"t1","budget":100.0,"daily":33.333333333333336,"shout":"PARIS","big":8,"level":"high"},{"id":"t2","budget":200.0,"daily":50.0,"shout":"ROME","big":12,"level":"high"},{"id":"t4","budget":80.0,"daily":40.0,"shout":"OSLO","big":20,"level":"low"}]"#,
                "\(name): \(out[1])")
            #expect(out[2] == #"count 3 ids ["\"t1\"", "\"t2\"", "\"t4\""]"#, "\(name): \(out[2])")
            #expect(
                out[3].contains(#"{"id":"t4","budget":80.0,"daily":40.0,"shout":"OSLO","big":20,"level":"low"}"#),
                "\(name): \(out[3])")
            #expect(
                out[4].hasPrefix(#"enumerate ["[[\"t1\", 100.0, 33.333333333333336, \"PARIS\", 8, \"high\"]]""#),
                "\(name): \(out[4])")
            #expect(out[5] == #"alone [{"id":"t1","twice":200.0}]"#, "\(name): \(out[5])")
            #expect(out[7] == #"changed [["t2", 400.0, 100.0, "ROME", 12, "high"]]"#, "\(name): \(out[7])")
            #expect(out[8].hasPrefix("named as a field: invalid_argument"), "\(name): \(out[8])")
            #expect(
                out[9].hasPrefix(#"no parse: invalid_predicate field "x": "#) && out[9].hasSuffix("@9"),
                "\(name): \(out[9])")
            #expect(
                out[10].contains(#"type_mismatch field "x": * takes numbers"#) && out[10].hasSuffix("@10"),
                "\(name): \(out[10])")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }

    /// A computed job stopped after its second save, run again: every record
    /// computed once, though each still matches the predicate after it;
    /// `now()` the first run's; each reject listed once. Run a third time,
    /// it changes nothing.
    static func resumed(_ backend: any Backend) async throws -> [String] {
        try await load(backend, count: 10)
        let store = backend.contract
        let rejects = FileManager.default.temporaryDirectory.appendingPathComponent("resume-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: rejects) }
        let compute = ["budget": "budget + 1000", "nights": "nights / 2", "checked": "now()"]
        @Sendable func run(stopAfter saves: Int?) async throws -> WriteCounts {
            // Three records a save.
            try await stopping(at: saves.map { $0 * 3 }, counting: { $0.updated + $0.rejected + $0.unchanged }) {
                try await store.update(
                    entity: "Trip", where: "budget < 100000", set: [:], compute: compute, author: "job", job: "j1",
                    batchSize: 3, rejectsPath: rejects, progress: $0)
            }
        }
        var out: [String] = []
        do {
            _ = try await run(stopAfter: 2)
            out.append("not stopped")
        } catch is CancellationError {
            out.append("stopped")
        }
        let first = try await backend.records("Trip").map { $0[6] }.filter { $0 != .null }
        // The clock moves on before the job resumes, so that a new now() would differ.
        let then = Timestamp.now()
        while Timestamp.now() == then { await Task.yield() }
        let counts = try await run(stopAfter: nil)
        out.append("resumed: upd \(counts.updated) rej \(counts.rejected)")
        let records = try await backend.records("Trip")
        out.append("budgets \(records.map { $0[2] })")
        out.append("nights \(records.map { $0[3] })")
        let stamped = records.map { $0[6] }.filter { $0 != .null }
        out.append("one now: \(stamped.count == 5 && Set(stamped).count == 1 && stamped.first == first.first)")
        let history = try await backend.history()
        let again = try await run(stopAfter: nil)
        out.append(
            "again: upd \(again.updated) rej \(again.rejected), history grew: \(try await backend.history().count > history.count)"
        )
        let lines = try String(contentsOfFile: rejects, encoding: .utf8).split(separator: "\n")
        out.append("rejects \(lines.count): " + lines.map { String($0.prefix(20)) }.joined(separator: " "))
        return out
    }

    @Test("a computed job stopped between saves resumes and computes each record exactly once")
    func resume() async throws {
        let answers = try await Backends.answers(entities: Self.trips(), Self.resumed)
        let budgets: [Value] = (1...10).map { (i: Int) -> Value in .double(Double(i) * 10 + (i % 2 == 0 ? 1000 : 0)) }
        let nights: [Value] = (1...10).map { (i: Int) -> Value in .int(Int64(i % 2 == 0 ? i / 2 : i)) }
        for (name, out) in answers {
            #expect(out[0] == "stopped", "\(name): \(out)")
            // Ten records, the five odd nights rejected (their budgets stay).
            #expect(out[1] == "resumed: upd 5 rej 5", "\(name): \(out)")
            #expect(out[2] == "budgets \(budgets)", "\(name): \(out)")
            #expect(out[3] == "nights \(nights)", "\(name): \(out)")
            #expect(out[4] == "one now: true", "\(name): \(out)")
            #expect(out[5] == "again: upd 5 rej 5, history grew: false", "\(name): \(out)")
            #expect(out[6].hasPrefix("rejects 5: "), "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }
}
