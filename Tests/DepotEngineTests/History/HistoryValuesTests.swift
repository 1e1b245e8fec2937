import DepotEngine
import Foundation
import Testing

/// `history = "values"` (DESIGN §11): what each kind of write logs.
@Suite("History with values")
struct HistoryValuesTests {
    static let columns = TemporaryStore.tripColumns + ["meta"]

    static func store() async throws -> TemporaryStore {
        try await TemporaryStore(entities: [
            TemporaryStore.tripEntity(
                extraFields: [Field(name: "meta", type: .json, isOptional: true)], history: .values)
        ])
    }

    static func trip(
        _ id: String, budget: Double = 900, favorite: Bool = false, notes: Value = nil,
        meta: Value = nil
    ) -> [Value] {
        [
            .string(id), .string("Trip \(id)"), "Rome", "2025-05-02T00:00:00.000Z", nil, .double(budget),
            .bool(favorite),
            notes, meta
        ]
    }

    static func write(
        _ t: TemporaryStore, _ rows: [[Value]], columns: [String] = columns,
        policy: ConflictPolicy = .upsert
    ) async throws -> WriteCounts {
        var batch = RecordBatch(entity: "Trip", columns: columns)
        for row in rows { batch.append(row) }
        let frozen = batch
        return try await t.store.save(author: "test") { try $0.write(frozen, policy: policy) }.value
    }

    static func changes(_ t: TemporaryStore) async throws -> [HistoryChange] {
        try await t.store.reader.history(limit: 1000).flatMap(\.changes)
    }

    @Test("an insert carries every field, an update the old and new changed fields, a delete every old field")
    func writes() async throws {
        let t = try await Self.store()
        _ = try await Self.write(t, [Self.trip("T1", meta: #"{"tags":["a"]}"#)])
        _ = try await Self.write(t, [Self.trip("T1", budget: 950, favorite: true, meta: #"{"tags":["a"]}"#)])
        // Only some columns: the others are not part of the update.
        _ = try await Self.write(t, [["T1", "a \"quoted\" note"]], columns: ["id", "notes"])
        try await t.store.delete(entity: "Trip", where: "id == 'T1'", author: "test")
        let changes = try await Self.changes(t)
        #expect(changes.map(\.kind) == [.insert, .update, .update, .delete])
        #expect(changes[0].old == nil)
        #expect(
            changes[0].new
                == #"{"id":"T1","name":"Trip T1","destination":"Rome","startDate":"2025-05-02T00:00:00.000Z","endDate":null,"budget":900.0,"isFavorite":false,"notes":null,"meta":{"tags":["a"]}}"#
        )
        #expect(changes[1].fields == ["budget", "isFavorite"])
        #expect(changes[1].old == #"{"budget":900.0,"isFavorite":false}"#)
        #expect(changes[1].new == #"{"budget":950.0,"isFavorite":true}"#)
        #expect(changes[2].fields == ["notes"])
        #expect(changes[2].old == #"{"notes":null}"#)
        #expect(changes[2].new == #"{"notes":"a \"quoted\" note"}"#)
        #expect(
            changes[3].old
                == #"{"id":"T1","name":"Trip T1","destination":"Rome","startDate":"2025-05-02T00:00:00.000Z","endDate":null,"budget":950.0,"isFavorite":true,"notes":"a \"quoted\" note","meta":{"tags":["a"]}}"#
        )
        #expect(changes[3].new == nil)
        // The tombstone is still the identifier and the preserved fields.
        #expect(changes[3].tombstone == #"{"id":"T1","name":"Trip T1"}"#)
        // Each is a JSON object that a JSON reader accepts.
        for text in changes.flatMap({ [$0.old, $0.new] }).compactMap({ $0 }) {
            #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [String: Any])
        }
    }

    @Test(
        "values are stored as arrays under a layout, and read back as objects across a change of the entity's fields; objects stored before read as they were"
    )
    func compactStorage() async throws {
        let t = try await Self.store()
        _ = try await Self.write(t, [Self.trip("T1")])
        _ = try await Self.write(t, [Self.trip("T1", budget: 950)])
        try await t.store.close()
        // Stored compact: no field names in the values; the insert names its layout.
        #expect(
            try sqlite3(t.path, "SELECT new FROM depot_changes WHERE kind = 'insert'")
                == #"["T1","Trip T1","Rome","2025-05-02T00:00:00.000Z",null,900.0,false,null,null]"#)
        #expect(try sqlite3(t.path, "SELECT old || new FROM depot_changes WHERE kind = 'update'") == "[900.0][950.0]")
        #expect(
            try sqlite3(t.path, "SELECT fields FROM depot_layouts")
                == #"["id","name","destination","startDate","endDate","budget","isFavorite","notes","meta"]"#)
        // A value written as an object, as version 2 did, stays as it was.
        _ = try sqlite3(
            t.path,
            "INSERT INTO depot_changes(txn, entity, identifier, kind, fields, old, new) "
                + #"VALUES (2, 'Trip', '"T1"', 'update', '["notes"]', '{"notes":null}', '{"notes":"x"}')"#)

        // The entity gains a field: its layout changes,
        // and the old insert still reads with the names it was written with.
        let wider = try TemporaryStore.tripEntity(
            extraFields: [
                Field(name: "meta", type: .json, isOptional: true), Field(name: "code", type: .string, isOptional: true)
            ],
            history: .values)
        let again = try await TemporaryStore(entities: [wider], folder: t.folder)
        var batch = RecordBatch(entity: "Trip", columns: Self.columns + ["code"])
        batch.append(Self.trip("T2") + ["X1"])
        let frozen = batch
        _ = try await again.store.save(author: "test") { try $0.write(frozen, policy: .upsert) }
        let changes = try await again.store.reader.history(limit: 1000).flatMap(\.changes)
        #expect(changes.map(\.kind) == [.insert, .update, .update, .insert])
        #expect(
            changes[0].new
                == #"{"id":"T1","name":"Trip T1","destination":"Rome","startDate":"2025-05-02T00:00:00.000Z","endDate":null,"budget":900.0,"isFavorite":false,"notes":null,"meta":null}"#
        )
        #expect(changes[1].old == #"{"budget":900.0}"# && changes[1].new == #"{"budget":950.0}"#)
        #expect(changes[2].old == #"{"notes":null}"# && changes[2].new == #"{"notes":"x"}"#)
        #expect(
            changes[3].new
                == #"{"id":"T2","name":"Trip T2","destination":"Rome","startDate":"2025-05-02T00:00:00.000Z","endDate":null,"budget":900.0,"isFavorite":false,"notes":null,"meta":null,"code":"X1"}"#
        )
        #expect(try sqlite3(t.path, "SELECT count(*) FROM depot_layouts") == "2")
    }

    @Test("replace logs every field that changed, including those it clears")
    func replace() async throws {
        let t = try await Self.store()
        _ = try await Self.write(t, [Self.trip("T1", notes: "keep me")])
        let counts = try await Self.write(
            t, [["T1", "Trip T1", "2025-05-02T00:00:00.000Z", 1000.0, false]],
            columns: ["id", "name", "startDate", "budget", "isFavorite"],
            policy: .replace)
        #expect(counts.updated == 1)
        let update = try #require(try await Self.changes(t).last)
        #expect(update.fields == ["destination", "budget", "notes"])
        #expect(update.old == #"{"destination":"Rome","budget":900.0,"notes":"keep me"}"#)
        #expect(update.new == #"{"destination":null,"budget":1000.0,"notes":null}"#)
    }

    @Test("batch update, batch delete and duplicate resolution log values the same way")
    func batchWrites() async throws {
        let t = try await Self.store()
        _ = try await Self.write(t, [Self.trip("A"), Self.trip("B", budget: 100), Self.trip("C")])
        let updated = try await t.store.update(
            entity: "Trip", where: "budget == 900.0",
            set: ["budget": 950.0, "isFavorite": false], author: "test")
        #expect(updated.updated == 2)
        var changes = try await Self.changes(t).suffix(2)
        #expect(changes.map(\.identifier) == [#""A""#, #""C""#])
        // isFavorite was already false: only the budget changed.
        #expect(changes.allSatisfy { $0.fields == ["budget"] })
        #expect(changes.allSatisfy { $0.old == #"{"budget":900.0}"# && $0.new == #"{"budget":950.0}"# })
        let resolved = try await t.store.resolveDuplicates(
            entity: "Trip", by: ["budget"], keep: .keepFirst,
            author: "test")
        #expect(resolved.deleted == 1)
        changes = try await Self.changes(t).suffix(1)
        #expect(changes.first?.kind == .delete)
        #expect(
            changes.first?.old
                == #"{"id":"C","name":"Trip C","destination":"Rome","startDate":"2025-05-02T00:00:00.000Z","endDate":null,"budget":950.0,"isFavorite":false,"notes":null,"meta":null}"#
        )
    }

    @Test("an import logs values, and its counters agree with the values it logged")
    func importValues() async throws {
        let t = try await Self.store()
        func run(_ job: String, _ text: String) async throws -> ImportProgress {
            let path = t.folder.appendingPathComponent("\(job).csv").path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return try await Importer.run(
                ImportRequest(
                    job: job, entity: "Trip", path: path,
                    rejectsPath: path + ".rejects"), into: t.store)
        }
        let header = "id,name,startDate,budget,isFavorite\n"
        let first = try await run("j1", header + "a,A,2025-01-01,10,false\nb,B,2025-01-02,20,true\n")
        let second = try await run(
            "j2", header + "a,A,2025-01-01,11,false\nb,B,2025-01-02,20,true\nc,C,2025-01-03,30,false\n")
        #expect(first.inserted == 2)
        #expect((second.inserted, second.updated, second.unchanged) == (1, 1, 1))
        let changes = try await Self.changes(t)
        #expect(changes.filter { $0.kind == .insert }.count == first.inserted + second.inserted)
        #expect(changes.filter { $0.kind == .update }.count == second.updated)
        let update = try #require(changes.first { $0.kind == .update })
        #expect(update.old == #"{"budget":10.0}"# && update.new == #"{"budget":11.0}"#)
        let inserted = try #require(changes.last)
        #expect(
            inserted.new
                == #"{"id":"c","name":"C","destination":null,"startDate":"2025-01-03","endDate":null,"budget":30.0,"isFavorite":false,"notes":null,"meta":null}"#
        )
    }
}

@Suite("History values: field order")
struct HistoryValuesOrderTests {
    /// The fields in the order the daemon's configuration gives them
    /// (TOML keys sorted): a REAL column before an INTEGER one, which
    /// SQLite 3.40's DELETE ... RETURNING read back as a float.
    @Test(
        "a delete's old values and tombstone keep each field's type, whatever the fields' order",
        arguments: [HistoryDetail.values, .fields])
    func deleteTypes(history: HistoryDetail) async throws {
        let entity = try EntitySchema(
            name: "T",
            fields: [
                Field(name: "budget", type: .double),
                Field(name: "id", type: .string),
                Field(name: "isFavorite", type: .bool)
            ],
            identifier: ["id"], preserveOnDelete: ["budget", "isFavorite"], history: history)
        let t = try await TemporaryStore(entities: [entity])
        var batch = RecordBatch(entity: "T", columns: ["id", "budget", "isFavorite"])
        batch.append(["a", 893.68, false])
        let frozen = batch
        _ = try await t.store.save(author: "x") { try $0.write(frozen, policy: .upsert) }
        try await t.store.delete(entity: "T", where: "budget < 900.0", author: "x")
        let changes = try await t.store.reader.history().flatMap(\.changes)
        #expect(changes.last?.old == (history == .values ? #"{"budget":893.68,"id":"a","isFavorite":false}"# : nil))
        #expect(changes.last?.tombstone == #"{"id":"a","budget":893.68,"isFavorite":false}"#)
    }
}

/// A save inserts its changes many rows to a statement
/// (`StoreConfiguration.changesPerStatement`): the history is the same,
/// change for change and in order, as when each has a statement of its own.
@Suite("History: changes inserted many to a statement")
struct ChangesPerStatementTests {
    static func history(changesPerStatement: Int) async throws -> [HistoryChange] {
        let t = try await TemporaryStore(entities: [
            TemporaryStore.tripEntity(
                extraFields: [Field(name: "meta", type: .json, isOptional: true)], history: .values)
        ]) {
            $0.changesPerStatement = changesPerStatement
        }
        // 150 inserts (two full statements of 64 and 22 left over at 64),
        // then updates of every third in one save with a few inserts, then a
        // delete of some: kinds, fields, values and identifiers interleaved.
        let rows: [[Value]] = (0..<150).map { i in
            HistoryValuesTests.trip("T\(i)", budget: Double(i), meta: i % 7 == 0 ? .string(#"{"n":1}"#) : .null)
        }
        _ = try await HistoryValuesTests.write(t, rows)
        var updates: [[Value]] = []
        for i in stride(from: 0, to: 150, by: 3) {
            updates.append(
                HistoryValuesTests.trip("T\(i)", budget: Double(i) + 0.5, favorite: i % 2 == 0, notes: .string("n\(i)"))
            )
        }
        for i in 150..<155 { updates.append(HistoryValuesTests.trip("T\(i)")) }
        _ = try await HistoryValuesTests.write(t, updates)
        try await t.store.delete(entity: "Trip", where: "budget < 40", author: "test")
        return try await t.store.reader.history(limit: 10_000).flatMap(\.changes)
    }

    @Test("the history is the same, change for change, with 1, 7 or 64 changes to a statement")
    func sameHistory() async throws {
        let one = try await Self.history(changesPerStatement: 1)
        #expect(one.count == 245)  // 150 inserts, 50 updates, 5 inserts, 40 deletes
        var kinds: [ChangeKind] = Array(repeating: .insert, count: 150)
        kinds += Array(repeating: .update, count: 50)
        kinds += Array(repeating: .insert, count: 5)
        kinds += Array(repeating: .delete, count: 40)
        #expect(one.map(\.kind) == kinds)
        for n in [7, 64] {
            let many = try await Self.history(changesPerStatement: n)
            #expect(many.count == one.count)
            for (a, b) in zip(one, many) {
                let same = a.kind == b.kind && a.identifier == b.identifier && a.fields == b.fields
                let sameValues = a.old == b.old && a.new == b.new && a.tombstone == b.tombstone
                #expect(same && sameValues, "\(n) a statement: \(a) vs \(b)")
            }
        }
    }
}
