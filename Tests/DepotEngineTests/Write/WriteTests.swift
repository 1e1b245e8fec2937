import DepotEngine
import Testing

@Suite("Writes and their history")
struct WriteTests {
    /// Every change of the store's history, as "kind identifier [fields]".
    func changes(_ t: TemporaryStore) async throws -> [String] {
        try await t.store.reader.history(limit: 1000).flatMap { txn in
            txn.changes.map { c in
                "\(c.kind.rawValue) \(c.identifier)" + (c.fields.map { " \($0.joined(separator: ","))" } ?? "")
            }
        }
    }

    @Test("upsert inserts, updates the given fields, and leaves equal records alone")
    func upsert() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        var batch = RecordBatch(entity: "Trip", columns: ["id", "budget", "notes"])
        batch.append(["t1", 1500.0, "Louvre"])  // equal: unchanged
        batch.append(["t2", 950.0, nil])  // budget changed
        batch.append(["t3", 700.0, "Trevi"])  // notes changed
        let frozen = batch
        let outcome = try await t.store.save(author: "test") { try $0.write(frozen, policy: .upsert) }
        #expect(outcome.value.inserted == 0)
        #expect(outcome.value.updated == 2)
        #expect(outcome.value.unchanged == 1)
        // Fields not given keep their values.
        let t2 = try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", where: "id == 't2'"))
        #expect(t2.value("name", row: 0) == "Zürich business")
        #expect(t2.value("budget", row: 0) == .double(950))
        let log = try await changes(t)
        #expect(log.count == 8)
        #expect(log.suffix(2) == ["update \"t2\" budget", "update \"t3\" notes"])
    }

    @Test("importing the same data again changes and logs nothing")
    func idempotent() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let again = try await t.insertTrips(TemporaryStore.sampleTrips)
        #expect(again.value.unchanged == 6)
        #expect(again.token == nil)
        #expect(try await t.store.reader.history().count == 1)
    }

    @Test("replace sets fields the record does not give to null")
    func replace() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        var batch = RecordBatch(entity: "Trip", columns: ["id", "name", "startDate", "budget", "isFavorite"])
        batch.append(["t1", "Paris in spring", "2025-04-01", 1500.0, true])
        let frozen = batch
        let outcome = try await t.store.save(author: "test") { try $0.write(frozen, policy: .replace) }
        #expect(outcome.value.updated == 1)
        let row = try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", where: "id == 't1'"))
        #expect(row.value("destination", row: 0) == .null)
        #expect(row.value("notes", row: 0) == .null)
        #expect(try await changes(t).last == "update \"t1\" destination,endDate,notes")
    }

    @Test("skip keeps stored records and counts them")
    func skip() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let outcome = try await t.insertTrips(
            [
                ["t1", "Other", "Oslo", "2025-01-01", nil, 1.0, false, nil],
                ["t9", "New", "Oslo", "2025-01-01", nil, 1.0, false, nil]
            ], policy: .skip)
        #expect(outcome.value.skipped == 1)
        #expect(outcome.value.inserted == 1)
        let t1 = try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", where: "id == 't1'"))
        #expect(t1.value("name", row: 0) == "Paris in spring")
    }

    @Test("fail rolls the whole save back at the first conflict")
    func fail() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let error = await #expect(throws: DepotError.self) {
            try await t.insertTrips(
                [
                    ["t8", "New", "Oslo", "2025-01-01", nil, 1.0, false, nil],
                    ["t1", "Other", "Oslo", "2025-01-01", nil, 1.0, false, nil]
                ], policy: .fail)
        }
        #expect(error?.code == .conflict)
        #expect(error?.message.contains("\"t1\"") == true)
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip")) == 6)
        #expect(try await t.store.reader.history().count == 1)
    }

    @Test("a null identifier or required field, or a new record missing one, is rejected alone")
    func rejections() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        var batch = RecordBatch(entity: "Trip", columns: ["id", "name", "budget"])
        batch.append([nil, "No id", 1.0])  // null identifier
        batch.append(["t1", nil, 1.0])  // null required field
        batch.append(["t7", "New", 1.0])  // new record without startDate, isFavorite
        batch.append(["t2", "Zürich trip", 900.0])  // fine: an update
        let frozen = batch
        let outcome = try await t.store.save(author: "test") { try $0.write(frozen, policy: .upsert) }
        #expect(outcome.value.rejections.map(\.row) == [0, 1, 2])
        #expect(outcome.value.rejections[0].reason == "identifier field \"id\" is null")
        #expect(outcome.value.rejections[1].field == "name")
        #expect(outcome.value.rejections[2].reason.contains("lacks required field \"startDate\""))
        #expect(outcome.value.updated == 1)
    }

    @Test("a batch that lacks the identifier or names an unknown field is refused")
    func badBatches() async throws {
        let t = try await TemporaryStore()
        var noID = RecordBatch(entity: "Trip", columns: ["name"])
        noID.append(["x"])
        let a = noID
        await #expect(throws: DepotError.self) {
            _ = try await t.store.save(author: "t") { try $0.write(a, policy: .upsert) }
        }
        var unknown = RecordBatch(entity: "Trip", columns: ["id", "budgett"])
        unknown.append(["x", 1.0])
        let b = unknown
        let error = await #expect(throws: DepotError.self) {
            _ = try await t.store.save(author: "t") { try $0.write(b, policy: .upsert) }
        }
        #expect(error?.code == .unknownField)
        #expect(error?.message.contains("did you mean \"budget\"") == true)
        var entity = RecordBatch(entity: "Trips", columns: ["id"])
        entity.append(["x"])
        let c = entity
        let entityError = await #expect(throws: DepotError.self) {
            _ = try await t.store.save(author: "t") { try $0.write(c, policy: .upsert) }
        }
        #expect(entityError?.code == .unknownEntity)
    }

    @Test("the same identifier twice in one batch: the later record wins")
    func duplicateInBatch() async throws {
        let t = try await TemporaryStore()
        let outcome = try await t.insertTrips([
            ["d1", "First", "Oslo", "2025-01-01", nil, 1.0, false, nil],
            ["d1", "Second", "Oslo", "2025-01-01", nil, 2.0, false, nil]
        ])
        #expect(outcome.value.inserted == 1)
        #expect(outcome.value.updated == 1)
        let row = try await t.store.reader.fetch(FetchDescriptor(entity: "Trip"))
        #expect(row.value("name", row: 0) == "Second")
        #expect(try await changes(t) == ["insert \"d1\"", "update \"d1\" name,budget"])
    }

    @Test("delete by predicate logs one tombstone per record with the preserved fields")
    func deleteByPredicate() async throws {
        let t = try await TemporaryStore(saveEvery: 2)
        try await t.insertSample()
        let counts = try await t.store.delete(entity: "Trip", where: "budget < 1000", author: "cleanup", batchSize: 2)
        #expect(counts.deleted == 3)
        #expect(try await t.ids("TRUEPREDICATE") == ["t1", "t5", "t6"])
        let history = try await t.store.reader.history(after: nil, author: "cleanup")
        #expect(history.count == 2)  // saves of 2 and 1 records
        let tombstones = history.flatMap(\.changes).map { $0.tombstone ?? "" }
        #expect(
            tombstones == [
                #"{"id":"t2","name":"Zürich business"}"#, #"{"id":"t3","name":"Rome weekend"}"#,
                #"{"id":"t4","name":"Test trip"}"#
            ])
        let none = try await t.store.delete(entity: "Trip", where: "budget < 0", author: "cleanup")
        #expect(none.deleted == 0)
        #expect(try await t.store.reader.history(author: "cleanup").count == 2)
    }

    @Test("update by predicate changes, counts unchanged records, and logs changed fields")
    func updateByPredicate() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let counts = try await t.store.update(
            entity: "Trip", where: "destination == 'Paris'",
            set: ["isFavorite": true, "notes": "updated"], author: "bulk",
            batchSize: 1)
        #expect(counts.updated == 2)
        let again = try await t.store.update(
            entity: "Trip", where: "destination == 'Paris'",
            set: ["isFavorite": true, "notes": "updated"], author: "bulk")
        #expect(again.updated == 0)
        #expect(again.unchanged == 2)
        let log = try await t.store.reader.history(author: "bulk").flatMap(\.changes)
        #expect(
            log.map { "\($0.identifier) \($0.fields ?? [])" } == [#""t1" ["notes"]"#, #""t5" ["isFavorite", "notes"]"#])
        await #expect(throws: DepotError.self) {
            try await t.store.update(entity: "Trip", where: nil, set: ["id": "x"], author: "bulk")
        }
        await #expect(throws: DepotError.self) {
            try await t.store.update(entity: "Trip", where: nil, set: ["budget": "cheap"], author: "bulk")
        }
        await #expect(throws: DepotError.self) {
            try await t.store.update(entity: "Trip", where: nil, set: ["name": nil], author: "bulk")
        }
    }

    @Test("a checkpoint commits with the records, or not at all; one that is not UTF-8 text is refused")
    func checkpoints() async throws {
        let t = try await TemporaryStore()
        let first = Array(#"{"line":1,"offset":2}"#.utf8)
        _ = try await t.store.withSave(author: "import", job: "j1") { save in
            try await save.setCheckpoint(job: "j1", data: first)
        }
        #expect(try await t.store.checkpoint(job: "j1") == first)
        await #expect(throws: DepotError.self) {
            _ = try await t.store.withSave(author: "import", job: "j1") { save in
                try await save.setCheckpoint(job: "j1", data: Array("{}".utf8))
                throw DepotError(.conflict, "boom")
            }
        }
        #expect(try await t.store.checkpoint(job: "j1") == first)
        let refused = await #expect(throws: DepotError.self) {
            _ = try await t.store.withSave(author: "import", job: "j1") { save in
                try await save.setCheckpoint(job: "j1", data: [0xFF, 0xFE])
            }
        }
        #expect(refused?.code == .invalidArgument)
        #expect(try await t.store.checkpoint(job: "j1") == first)
        _ = try await t.store.withSave(author: "import", job: "j1") { save in
            try await save.removeCheckpoint(job: "j1")
        }
        #expect(try await t.store.checkpoint(job: "j1") == nil)
    }
}

@Suite("Saves release what they hold")
struct SaveLifetimeTests {
    /// A save's context caches a writer per entity and column set; the
    /// writer once held its context strongly, and both leaked on every save
    /// (found by LeakSanitizer under scripts/fuzz).
    @Test("a save's context and its writers are freed when the save ends")
    func contextFreed() async throws {
        let t = try await TemporaryStore()
        final class Weak: @unchecked Sendable {
            // Written inside the save, read after it: the save's await orders them.
            weak var context: SaveContext?
        }
        let probe = Weak()
        var batch = RecordBatch(entity: "Trip", columns: TemporaryStore.tripColumns)
        for row in TemporaryStore.sampleTrips { batch.append(row) }
        let frozen = batch
        _ = try await t.store.save(author: "test") { save in
            probe.context = save
            return try save.write(frozen, policy: .upsert)
        }
        #expect(probe.context == nil)
    }
}
