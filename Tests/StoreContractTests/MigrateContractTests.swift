import DepotEngine
import Foundation
import Synchronization
import Testing

/// Migrate jobs (DESIGN §18) on both backends: a change of type, a new
/// required field and an optional field made required, each with
/// `convert`; the store serves the old shape until the switch; the dry run
/// lists exactly the records the run rejects; a job stopped anywhere and
/// run again equals a clean run, records changed meanwhile converted too; a
/// conversion that fails on every record changes nothing; a `convert` that
/// does not compile is refused at open, naming its field.
@Suite("Migrate contract: convert on SQLite and PostgreSQL")
struct MigrateContractTests {
    /// Trip with `budget` as int cents, a new `code`, and `note` required.
    static func converted(budget: String = "trunc:(budget * 100)") throws -> [EntitySchema] {
        var declaration = EntityDeclaration(
            name: "Trip",
            fields: [
                Field(name: "id", type: .string), Field(name: "destination", type: .string),
                Field(name: "budget", type: .int), Field(name: "nights", type: .int),
                Field(name: "qty", type: .int), Field(name: "note", type: .string),
                Field(name: "checked", type: .date, isOptional: true), Field(name: "code", type: .string)
            ],
            identifier: ["id"], indexes: [["budget"], ["code"]], history: .values)
        declaration.fieldsConverted = [
            "budget": budget, "code": "uppercase:(destination)", "note": #"TERNARY(note == nil, "none", note)"#
        ]
        return try EntityDeclaration.resolve([declaration])
    }

    static func load(_ backend: any Backend) async throws {
        try await ComputeContractTests.load(backend, count: 12)
        var batch = RecordBatch(entity: "Trip", columns: ["id", "destination", "budget", "nights", "qty", "note"])
        // 1e300 cents do not fit an int: rejected.
        batch.append(["t13", "Oslo", .double(1e300), 2, 5, "big"])
        batch.append(["t14", "Lima", .double(12.345), 2, 5, .null])
        _ = try await backend.write(batch)
    }

    /// Runs the migration of Trip, stopping (as a killed job does) after
    /// `stop` saves and running again, with `touch` changing a record
    /// between the two runs.
    static func migrate(
        _ backend: any Backend, job: String, rejects: String, stop: Int?, touch: Bool, stoppedJob: String? = nil
    ) async throws -> WriteCounts {
        if let stop {
            let saves = Counter()
            let store = backend.contract
            let task = Task {
                try await store.migrate(
                    entity: "Trip", author: "depotd", job: stoppedJob ?? job, batchSize: 3, rejectsPath: rejects
                ) { _ in if saves.increment() >= stop { withUnsafeCurrentTask { $0?.cancel() } } }
            }
            do {
                _ = try await task.value
            } catch is CancellationError {}
            if touch {
                var batch = RecordBatch(entity: "Trip", columns: ["id", "destination", "budget", "nights", "qty"])
                batch.append(["t01", "Rome", .double(7.5), 1, 1])
                batch.append(["t15", "Nice", .double(1.25), 1, 1])
                _ = try await backend.write(batch)
            }
        }
        return try await backend.contract.migrate(
            entity: "Trip", author: "depotd", job: job, batchSize: 3, rejectsPath: rejects)
    }

    /// - Parameter startOver: the migration stopped (after `stop` saves)
    ///   is not resumed but run anew by another job, over the columns it left.
    static func script(_ backend: any Backend, stop: Int?, startOver: Bool = false) async throws -> [String] {
        var backend = backend
        var out: [String] = []
        try await load(backend)
        backend = try await backend.reopen(entities: try Self.converted())
        let served = try backend.contract.reads.entity("Trip")
        out.append("served: \(served.fields.map(\.declaration))")
        let preview = try await backend.contract.migrationPreview(entity: "Trip", target: nil)
        out.append(
            "preview: \(preview.records) records, rejects \(preview.rejects.map { "\($0.identifier) \($0.field)" })")
        let rejects = NSTemporaryDirectory() + "migrate-\(UUID().uuidString).ndjson"
        defer { unlink(rejects) }
        let counts = try await Self.migrate(
            backend, job: "m1", rejects: rejects, stop: stop, touch: stop != nil && !startOver,
            stoppedJob: startOver ? "m0" : nil)
        out.append("counts: rejected \(counts.rejected) deleted \(counts.deleted)")
        let entity = try backend.contract.reads.entity("Trip")
        out.append("now: \(entity.fields.map(\.declaration))")
        out.append("records: \(try await backend.records("Trip"))")
        out.append("indexes: \(try await backend.indexes("Trip"))")
        out.append("rejects: \((try? String(contentsOfFile: rejects, encoding: .utf8)) ?? "")")
        let deletes = try await backend.history().flatMap(\.changes).filter { $0.kind == .delete }
        out.append("deleted: \(deletes.map(\.identifier))")
        out.append(
            "fetch: \(try await backend.count(FetchDescriptor(entity: "Trip", where: "budget == 12000 AND code == 'ROME'")))"
        )
        // Opened again as configured: nothing left to migrate.
        backend = try await backend.reopen(entities: try Self.converted())
        out.append("again: \(backend.contract.settings.schema.migrations.keys.sorted())")
        await backend.close()
        return out
    }

    /// Started over: a migration stopped after two saves, then run by a
    /// job of its own, finds the columns the first one filled (emptied on
    /// SQLite, dropped and added again on PostgreSQL: written once since
    /// issue 52) and ends as a clean run.
    @Test(
        "a migration converts, rejects what the dry run listed, and switches, also when started over; alike on each backend",
        arguments: [false, true])
    func clean(startedOver: Bool) async throws {
        let answers = try await Backends.answers(entities: ComputeContractTests.trips()) {
            try await Self.script($0, stop: startedOver ? 2 : nil, startOver: startedOver)
        }
        for (name, out) in answers {
            #expect(
                out[0] == #"served: ["string", "string", "double", "int", "int", "string?", "date?"]"#,
                "\(name): \(out)")
            #expect(out[1] == #"preview: 14 records, rejects ["\"t13\" budget"]"#, "\(name): \(out)")
            #expect(out[2] == "counts: rejected 1 deleted 1", "\(name): \(out)")
            #expect(
                out[3] == #"now: ["string", "string", "int", "int", "int", "string", "date?", "string"]"#,
                "\(name): \(out)")
            #expect(out[4].contains(#"["t01", "Rome", 1000, 1, 1, "none", nil, "ROME"]"#), "\(name): \(out)")
            #expect(out[4].contains(#"["t14", "Lima", 1234, 2, 5, "none", nil, "LIMA"]"#), "\(name): \(out)")
            #expect(!out[4].contains("t13"), "\(name): \(out)")
            #expect(out[5] == #"indexes: [["budget"], ["code"]]"#, "\(name): \(out)")
            #expect(out[6].contains(#"{"identifier":"t13","field":"budget","reason":"#), "\(name): \(out)")
            #expect(
                out[6].contains(#""record":{"id":"t13","destination":"Oslo","budget":1e+300"#)
                    || out[6].contains(#""record":{"id":"t13","destination":"Oslo","budget":1.0e+300"#),
                "\(name): \(out)")
            #expect(out[7] == #"deleted: ["\"t13\""]"#, "\(name): \(out)")
            #expect(out[8] == "fetch: 1", "\(name): \(out)")
            #expect(out[9] == "again: []", "\(name): \(out)")
        }
        #expect(answers.count < 2 || answers[0].1 == answers[1].1)
    }

    @Test(
        "a migration stopped after any save and run again equals a clean run, with the records changed meanwhile converted",
        arguments: [1, 2, 4, 6])
    func resumed(stop: Int) async throws {
        let answers = try await Backends.answers(entities: ComputeContractTests.trips()) {
            try await Self.script($0, stop: stop)
        }
        for (name, out) in answers {
            #expect(out[2] == "counts: rejected 1 deleted 1", "\(name) stop \(stop): \(out)")
            #expect(
                out[4].contains(#"["t01", "Rome", 750, 1, 1, "none", nil, "ROME"]"#), "\(name) stop \(stop): \(out)")
            #expect(
                out[4].contains(#"["t15", "Nice", 125, 1, 1, "none", nil, "NICE"]"#), "\(name) stop \(stop): \(out)")
            #expect(
                !out[4].contains("t13") && out[8] == "fetch: 1" && out[9] == "again: []", "\(name) stop \(stop): \(out)"
            )
            #expect(
                out[6].components(separatedBy: "\n").filter { !$0.isEmpty }.count == 1, "\(name) stop \(stop): \(out)")
        }
    }

    @Test("a conversion that fails on every record changes nothing; a convert that does not compile is refused at open")
    func refused() async throws {
        let answers = try await Backends.answers(entities: ComputeContractTests.trips()) { backend in
            var backend = backend
            var out: [String] = []
            try await Self.load(backend)
            let before = try await backend.records("Trip")
            backend = try await backend.reopen(entities: try Self.converted(budget: "budget + 0.5"))
            do {
                try await backend.contract.migrate(entity: "Trip", author: "depotd", job: "m2")
                out.append("migrated")
            } catch let error as DepotError {
                out.append("\(error.code) \(error.message)")
            }
            out.append("unchanged: \(try await backend.records("Trip") == before)")
            out.append("served: \(try backend.contract.reads.entity("Trip").fields.map(\.declaration))")
            do {
                backend = try await backend.reopen(entities: try Self.converted(budget: "budget * "))
                out.append("opened")
            } catch let error as DepotError {
                out.append("\(error.code) \(error.message)")
                backend = try await backend.reopen(entities: try ComputeContractTests.trips())
            }
            await backend.close()
            return out
        }
        for (name, out) in answers {
            #expect(
                out[0].hasPrefix("migration_refused") && out[0].contains("fails on every record (14)"),
                "\(name): \(out)")
            #expect(out[1] == "unchanged: true", "\(name): \(out)")
            #expect(out[2].contains(#""double""#), "\(name): \(out)")
            #expect(
                out[3].hasPrefix("migration_refused") && out[3].contains(#"field "budget": convert "budget * ""#),
                "\(name): \(out)")
        }
    }
}

extension MigrateContractTests {
    @Test("an entity created over the API migrates by a PUT of its new definition with convert; alike on each backend")
    func createdOverTheAPI() async throws {
        let answers = try await Backends.answers(entities: ComputeContractTests.trips()) { backend in
            var backend = backend
            var out: [String] = []
            func put(_ json: String) async throws -> Bool {
                try await backend.contract.putEntity(
                    try EntityDefinition(json: Array(json.utf8), name: "Codes").schema())
            }
            _ = try await put(#"{"identifier": "code", "fields": {"code": "string", "n": "double"}}"#)
            var batch = RecordBatch(entity: "Codes", columns: ["code", "n"])
            batch.append(["a", 12.0])
            batch.append(["b", 2.5])
            batch.append(["c", 7.0])
            _ = try await backend.write(batch)
            let changed = try await put(
                #"{"identifier": "code", "fields": {"code": "string", "n": "int"}, "convert": {"n": "n"}}"#)
            out.append("changed: \(changed), waiting: \(backend.contract.settings.schema.migrations.keys.sorted())")
            out.append("served: \(try backend.contract.reads.entity("Codes").fields.map(\.declaration))")
            let counts = try await backend.contract.migrate(entity: "Codes", author: "depotd", job: "mc")
            out.append("rejected \(counts.rejected)")
            out.append("records: \(try await backend.records("Codes"))")
            backend = try await backend.reopen(entities: try ComputeContractTests.trips())
            out.append(
                "reopened: \(try backend.contract.reads.entity("Codes").fields.map(\.declaration)) \(backend.contract.settings.schema.migrations.isEmpty)"
            )
            await backend.close()
            return out
        }
        for (name, out) in answers {
            #expect(
                out == [
                    #"changed: true, waiting: ["Codes"]"#, #"served: ["string", "double"]"#, "rejected 1",
                    #"records: [["a", 12], ["c", 7]]"#, #"reopened: ["string", "int"] true"#
                ], "\(name): \(out)")
        }
    }
}

extension MigrateContractTests {
    /// Trip identified by (nights, note) instead of id.
    static func rekeyed() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Trip",
                fields: [
                    Field(name: "id", type: .string), Field(name: "destination", type: .string),
                    Field(name: "budget", type: .double), Field(name: "nights", type: .int),
                    Field(name: "qty", type: .int), Field(name: "note", type: .string),
                    Field(name: "checked", type: .date, isOptional: true)
                ],
                identifier: ["nights", "note"], indexes: [["id"]], history: .values)
        ])
    }

    @Test(
        "a new identifier: the records whose key is null or another's are rejected as the dry run listed, the rest keyed anew; alike on each backend"
    )
    func newIdentifier() async throws {
        let answers = try await Backends.answers(entities: ComputeContractTests.trips()) { backend in
            var backend = backend
            var out: [String] = []
            try await ComputeContractTests.load(backend, count: 12)
            try await backend.contract.update(
                entity: "Trip", where: "id != 't12'", set: ["note": .string("n")], author: "t")
            var batch = RecordBatch(entity: "Trip", columns: ["id", "destination", "budget", "nights", "qty", "note"])
            batch.append(["t13", "Oslo", 1.0, 3, 1, "n"])
            _ = try await backend.write(batch)
            backend = try await backend.reopen(entities: try Self.rekeyed())
            out.append("served: \(try backend.contract.reads.entity("Trip").identifier)")
            let preview = try await backend.contract.migrationPreview(entity: "Trip", target: nil)
            out.append(
                "preview: \(preview.records) records, rejects \(preview.rejects.map(\.identifier.json).sorted())")
            let counts = try await backend.contract.migrate(entity: "Trip", author: "depotd", job: "mk")
            out.append("rejected \(counts.rejected), deleted \(counts.deleted)")
            out.append("now: \(try backend.contract.reads.entity("Trip").identifier)")
            let t03 = try await backend.contract.reads.record("Trip", identifier: [.int(3), .string("n")])
            out.append("by the new key: \(t03.map { "\($0.values[0])" } ?? "none")")
            var upsert = RecordBatch(entity: "Trip", columns: ["id", "destination", "budget", "nights", "qty", "note"])
            upsert.append(["t03b", "Lima", 9.0, 3, 1, "n"])
            let written = try await backend.write(upsert)
            out.append("upsert: \(written.inserted) inserted \(written.updated) updated")
            out.append("count: \(try await backend.count(FetchDescriptor(entity: "Trip")))")
            out.append("indexes: \(try await backend.indexes("Trip"))")
            backend = try await backend.reopen(entities: try Self.rekeyed())
            out.append("again: \(backend.contract.settings.schema.migrations.isEmpty)")
            await backend.close()
            return out
        }
        for (name, out) in answers {
            #expect(
                out == [
                    #"served: ["id"]"#, #"preview: 13 records, rejects ["\"t12\"", "\"t13\""]"#,
                    "rejected 2, deleted 2", #"now: ["nights", "note"]"#, #"by the new key: "t03""#,
                    "upsert: 0 inserted 1 updated", "count: 11", #"indexes: [["id"]]"#, "again: true"
                ], "\(name): \(out)")
        }
    }
}

/// Counts calls from any thread.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }
}
