import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// The engine's write contract, run on both backends: the same batches give
/// the same counters, rejections, records and history (text for text) on an
/// SQLite store and on a PostgreSQL store. Each scenario also checks what
/// it must give on its own, so that two backends wrong alike still fail.
@Suite("Write contract: SQLite and PostgreSQL")
struct WriteContractTests {
    static let columns = ["id", "name", "destination", "startDate", "endDate", "budget", "isFavorite", "notes", "meta"]

    static func trip(values: Bool = true) throws -> EntitySchema { try TestEntities.trip(values: values) }

    static func row(
        _ id: String, _ name: String = "Trip", budget: Double = 900, favorite: Bool = false,
        destination: Value = "Rome", notes: Value = nil, meta: Value = nil,
        start: Value = "2025-05-02T00:00:00.000Z"
    ) -> [Value] {
        [.string(id), .string(name), destination, start, nil, .double(budget), .bool(favorite), notes, meta]
    }

    static func batch(_ rows: [[Value]], columns: [String] = columns) -> RecordBatch {
        var batch = RecordBatch(entity: "Trip", columns: columns)
        for row in rows { batch.append(row) }
        return batch
    }

    /// What a scenario gave on one backend, without what differs by nature
    /// (tokens' numbers, timestamps).
    struct Transcript: Equatable, CustomStringConvertible {
        var counts: [WriteCounts] = []
        var errors: [String] = []
        var records: [[Value]] = []
        var history: [[HistoryChange]] = []
        var authors: [String] = []
        var description: String {
            "counts \(counts)\nerrors \(errors)\nrecords \(records)\nhistory \(history)"
        }
    }

    static func transcript(_ backend: any Backend, _ steps: [(RecordBatch, ConflictPolicy, Bool)]) async throws
        -> Transcript
    {
        var t = Transcript()
        for (batch, policy, supersede) in steps {
            do {
                t.counts.append(try await backend.write(batch, policy: policy, supersede: supersede))
            } catch let error as DepotError {
                t.errors.append("\(error.code): \(error.message)")
            }
        }
        t.records = try await backend.records("Trip")
        let history = try await backend.history()
        t.history = history.map(\.changes)
        t.authors = history.map(\.author)
        return t
    }

    /// Runs `steps` on every backend; every transcript must equal SQLite's.
    static func onEveryBackend(values: Bool = true, _ steps: [(RecordBatch, ConflictPolicy, Bool)]) async throws
        -> Transcript
    {
        var first: Transcript?
        for name in Backends.names {
            let backend = try await Backends.open(name, entities: [trip(values: values)])
            let t: Transcript
            do {
                t = try await transcript(backend, steps)
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
            if let first {
                #expect(t == first, "\(name) differs from sqlite:\n\(t)\n--- sqlite:\n\(first)")
            } else {
                first = t
            }
        }
        return first!
    }

    @Test("the server is there when the suite requires it (scripts/test sets DEPOT_REQUIRE_POSTGRES=1)")
    func serverWhenRequired() {
        #expect(
            !TestServer.required || TestServer.available,
            "DEPOT_REQUIRE_POSTGRES=1 but DEPOT_TEST_POSTGRES_URL is not set: scripts/test starts scripts/pg-cluster")
    }

    @Test("upsert: inserts, updates of the changed fields only, unchanged records neither written nor logged")
    func upsert() async throws {
        let t = try await Self.onEveryBackend([
            (
                Self.batch([Self.row("T1"), Self.row("T2", meta: #"{"tags": ["a", 1.50]}"#), Self.row("T3")]), .upsert,
                false
            ),
            (
                Self.batch([
                    Self.row("T1", budget: 950, favorite: true), Self.row("T2", meta: #"{"tags": ["a", 1.50]}"#),
                    Self.row("T4", destination: nil)
                ]), .upsert, false
            ),
            // Only some columns: the others keep their values.
            (Self.batch([["T3", "a \"quoted\"\ttab\nnewline \\ back ünï"]], columns: ["id", "notes"]), .upsert, false)
        ])
        #expect(t.counts.map(\.inserted) == [3, 1, 0])
        #expect(t.counts.map(\.updated) == [0, 1, 1])
        #expect(t.counts.map(\.unchanged) == [0, 1, 0])
        #expect(t.history.map(\.count) == [3, 2, 1])
        #expect(t.history[1][0].fields == ["budget", "isFavorite"])
        #expect(t.history[1][0].old == #"{"budget":900.0,"isFavorite":false}"#)
        #expect(t.history[1][0].new == #"{"budget":950.0,"isFavorite":true}"#)
        #expect(t.history[0][1].new?.contains(#""meta":{"tags": ["a", 1.50]}"#) == true)
        #expect(t.records.count == 4)
        #expect(t.records[2][7] == "a \"quoted\"\ttab\nnewline \\ back ünï")
        #expect(t.records[3][2] == .null)
    }

    @Test("skip, fail and replace: skipped rows, a conflict that keeps nothing of its save, replaced records")
    func policies() async throws {
        let t = try await Self.onEveryBackend([
            (Self.batch([Self.row("T1", notes: "n"), Self.row("T2")]), .upsert, false),
            (Self.batch([Self.row("T1", budget: 1), Self.row("T3")]), .skip, false),
            (Self.batch([Self.row("T4"), Self.row("T2", budget: 2)]), .fail, false),
            // Replace: absent optional fields become null; a replacing record
            // without a required field is refused; a new one without it too.
            (
                Self.batch(
                    [
                        ["T1", "R", "2025-01-01T00:00:00.000Z", 5.0, true],
                        ["T9", "N", "2025-01-01T00:00:00.000Z", 1.0, false]
                    ],
                    columns: ["id", "name", "startDate", "budget", "isFavorite"]), .replace, false
            ),
            (Self.batch([["T2", "no budget"], ["T8", "new"]], columns: ["id", "name"]), .replace, false)
        ])
        #expect(t.counts.map(\.skipped) == [0, 1, 0, 0])
        #expect(t.counts[1].inserted == 1)
        #expect(t.errors.count == 1)
        #expect(t.errors.first?.contains("already exists and the conflict policy is fail") == true)
        #expect(t.counts[2].updated == 1 && t.counts[2].inserted == 1)
        #expect(
            t.counts[3].rejections.map(\.reason) == [
                #"a replacing record lacks required field "startDate""#,
                #"new record lacks required field "startDate""#
            ])
        #expect(t.records.map { $0[0] } == ["T1", "T2", "T3", "T9"])
        #expect(t.records[0][2] == .null && t.records[0][7] == .null && t.records[0][1] == "R")
    }

    @Test("rows refused before writing: a null identifier or required field, with the reason")
    func rejections() async throws {
        let t = try await Self.onEveryBackend([
            (
                Self.batch([
                    Self.row("T1"), [nil, "x", nil, "2025-01-01T00:00:00.000Z", nil, 1.0, true, nil, nil],
                    ["T2", nil, nil, "2025-01-01T00:00:00.000Z", nil, 1.0, true, nil, nil], Self.row("T3")
                ]), .upsert, false
            )
        ])
        #expect(t.counts[0].inserted == 2)
        #expect(t.counts[0].rejections.map(\.row) == [1, 2])
        #expect(
            t.counts[0].rejections.map(\.reason) == [
                #"identifier field "id" is null"#, #"required field "name" is null"#
            ]
        )
    }

    @Test("one identifier twice in a batch: in order, the second updates the first; as an import, the last wins")
    func repeatedIdentifiers() async throws {
        let inOrder = try await Self.onEveryBackend([
            (
                Self.batch([
                    Self.row("T1", budget: 1), Self.row("T2"), Self.row("T1", budget: 2), Self.row("T1", budget: 2)
                ]),
                .upsert, false
            )
        ])
        #expect(inOrder.counts[0].inserted == 2 && inOrder.counts[0].updated == 1 && inOrder.counts[0].unchanged == 1)
        #expect(inOrder.history[0].map(\.kind) == [.insert, .insert, .update])
        let imported = try await Self.onEveryBackend([
            (
                Self.batch([
                    Self.row("T1", budget: 1), Self.row("T2"), Self.row("T1", budget: 2), Self.row("T1", budget: 3)
                ]),
                .upsert, true
            )
        ])
        #expect(imported.counts[0].inserted == 2 && imported.counts[0].duplicates == 2)
        #expect(imported.records[0][5] == 3.0)
    }

    @Test("values of every type come back as they were written: text with escapes, dates, numbers, booleans, JSON")
    func values() async throws {
        let rows: [[Value]] = [
            Self.row("a", "tab\there", budget: 0.1, notes: "back\\slash", meta: #"{"x":[1,2.5e3,"\u00e9"]}"#),
            Self.row("b", "line\nbreak\r", budget: 1e20, favorite: true, notes: "", start: "1999-12-31T23:59:59.999Z"),
            Self.row("c", "émoji 🚀 ünïcödé", budget: -0.5, notes: "\\N", meta: "[]", start: "2025-03-14T09:30:00.001Z"),
            Self.row("B", "upper case sorts before lower", budget: 123456789.125),
            // A day stays a day: not a midnight.
            Self.row("d", "a day", start: "2025-05-02")
        ]
        let t = try await Self.onEveryBackend([(Self.batch(rows), .upsert, false), (Self.batch(rows), .upsert, false)])
        #expect(t.counts[1].unchanged == 5)
        #expect(t.records.map { $0[0] } == ["B", "a", "b", "c", "d"])
        #expect(t.records[4] == rows[4])
        #expect(t.records[1] == rows[0])
        #expect(t.records[2] == rows[1])
        #expect(t.records[3] == rows[2])
    }

    @Test("an entity and fields named with double quotes, spaces and a backslash are written, updated and read alike")
    func quotedNames() async throws {
        let odd = try EntitySchema(
            name: #"Odd "entity" \ name"#,
            fields: [
                Field(name: #"the "id""#, type: .string), Field(name: "a b", type: .string, isOptional: true),
                Field(name: #"c"d"#, type: .int, isOptional: true)
            ],
            identifier: [#"the "id""#], indexes: [["a b"], [#"c"d"#]], history: .values)
        let columns = [#"the "id""#, "a b", #"c"d"#]
        let answers = try await Backends.answers(entities: [odd]) { backend -> [String] in
            var first = RecordBatch(entity: odd.name, columns: columns)
            first.append(["x", "one", 1])
            first.append(["y", nil, 2])
            var second = RecordBatch(entity: odd.name, columns: columns)
            second.append(["x", "uno", 1])
            second.append(["z", "three", nil])
            let counts = [
                try await backend.write(first, policy: .upsert, supersede: true),
                try await backend.write(second, policy: .upsert, supersede: true)
            ]
            return [
                "\(counts)", "\(try await backend.records(odd.name))",
                "\(try await backend.history().map { $0.changes.map { "\($0.kind) \($0.identifier) \($0.new ?? "-")" } })"
            ]
        }
        #expect(answers.first?.1[1] == #"[["x", "uno", 1], ["y", nil, 2], ["z", "three", nil]]"#)
        for (name, answer) in answers.dropFirst() { #expect(answer == answers[0].1, "\(name)") }
    }

    @Test(
        "identifiers of each type, and of two fields: a second write finds each stored record, on both backends alike",
        arguments: [FieldType.string, .date, .int, .double, .bool])
    func identifierTypes(_ type: FieldType) async throws {
        let keys: [Value] =
            switch type {
            case .string: ["a", "b\tc", "é"]
            case .date: ["2025-05-02", "1999-12-31T23:59:59.999Z", "2025-05-03"]
            case .int: [1, -7, 9_007_199_254_740_993]
            case .double: [0.1, -2.5e-300, 1e20]
            case .bool: [true, false]
            case .json: []
            }
        for composite in [false, true] {
            let entity = try EntitySchema(
                name: "Keyed",
                fields: [Field(name: "k", type: type), Field(name: "n", type: .int), Field(name: "v", type: .string)],
                identifier: composite ? ["k", "n"] : ["k"], history: .values)
            let answers = try await Backends.answers(entities: [entity]) { backend -> [String] in
                var first = RecordBatch(entity: "Keyed", columns: ["k", "n", "v"])
                for key in keys { first.append([key, 1, "old"]) }
                var second = RecordBatch(entity: "Keyed", columns: ["k", "n", "v"])
                for key in keys.reversed() { second.append([key, 1, "new"]) }
                second.append([keys[0], 2, "other"])
                let counts = [
                    try await backend.write(first, policy: .upsert, supersede: true),
                    try await backend.write(second, policy: .upsert, supersede: true)
                ]
                return [
                    "\(counts)", "\(try await backend.records("Keyed"))",
                    "\(try await backend.history().map(\.changes))"
                ]
            }
            // Every key found again: one update each (or, with two fields, the new line a record).
            #expect(answers[0].1[0].contains("updated: \(keys.count)"), "\(type) \(composite)")
            for (name, answer) in answers.dropFirst() {
                #expect(answer == answers[0].1, "\(name) \(type) \(composite)")
            }
        }
    }

    @Test("history of fields only: the changed fields' names, no values")
    func fieldsOnly() async throws {
        let t = try await Self.onEveryBackend(
            values: false,
            [
                (Self.batch([Self.row("T1")]), .upsert, false),
                (Self.batch([Self.row("T1", budget: 5)]), .upsert, false)
            ])
        #expect(t.history[1][0].fields == ["budget"])
        #expect(t.history.joined().allSatisfy { $0.old == nil && $0.new == nil })
    }

    @Test("a batch of thousands: the same counters and history, change for change")
    func manyRows() async throws {
        var first: [[Value]] = []
        for i in 0..<3000 { first.append(Self.row(String(format: "T%05d", i), budget: Double(i))) }
        var second: [[Value]] = []
        for i in 0..<4000 {
            let budget = Double(i / 2 * 2)
            second.append(Self.row(String(format: "T%05d", i), budget: budget, favorite: i % 3 == 0))
        }
        let t = try await Self.onEveryBackend([
            (Self.batch(first), .upsert, false), (Self.batch(second), .upsert, false)
        ])
        #expect(t.counts[1].inserted == 1000)
        #expect(t.counts[1].updated + t.counts[1].unchanged == 3000)
        #expect(t.history[1].count == t.counts[1].inserted + t.counts[1].updated)
    }

    @Test(
        "runs of new records share history rows on PostgreSQL: cut by updates, by their length, by a JSON value with a line break; read back change for change"
    )
    func insertRuns() async throws {
        // 2,500 new records (runs of at most 1,024 a row), two of them with
        // JSON holding line breaks, which take a row of their own.
        var first: [[Value]] = []
        for i in 0..<2500 {
            let meta: Value =
                i == 7 || i == 1500 ? .string("{\n  \"line\": \(i)\n}") : i % 10 == 0 ? .string("[\(i)]") : .null
            first.append(Self.row(String(format: "T%05d", i), "name \(i)\twith a tab", budget: Double(i), meta: meta))
        }
        // New records between updates, one at a time and in runs.
        var second: [[Value]] = []
        for i in stride(from: 0, to: 3000, by: 7) { second.append(Self.row(String(format: "T%05d", i), budget: -1)) }
        for i in 0..<5 { second.insert(Self.row("N\(i)"), at: i * 60) }
        let steps: [(RecordBatch, ConflictPolicy, Bool)] = [
            (Self.batch(first), .upsert, false), (Self.batch(second), .upsert, false)
        ]
        let t = try await Self.onEveryBackend(steps)
        #expect(t.history[0].count == 2500)
        #expect(t.history[0][7].new?.contains("\n") == true)
        let fresh = (2500..<3000).filter { $0 % 7 == 0 }.count
        let inserted = t.history[1].filter { $0.kind == .insert }.count
        #expect(inserted == 5 + fresh)
        #expect(t.history[1].count == t.counts[1].inserted + t.counts[1].updated)
        guard TestServer.available else { return }
        // On PostgreSQL, fewer rows than changes: the runs share them.
        let backend = try await PostgresBackend(entities: [Self.trip()])
        do {
            for (batch, policy, supersede) in steps {
                _ = try await backend.write(batch, policy: policy, supersede: supersede)
            }
            let store = backend.store
            let rows = try await store.read {
                try await PostgresSQL.textRows(
                    $0,
                    "SELECT txn::text, count(*)::text, sum(coalesce(span, 1))::text FROM "
                        + "\(store.table("depot_changes")) GROUP BY txn ORDER BY txn", logger: store.logger)
            }
            // The first save: 2,500 changes in rows of 7, 1 (a line break),
            // 1,024 (the longest run), 468, 1 (a line break) and 999.
            #expect(rows.first?[1] == "6" && rows.first?[2] == "2500", "\(rows)")
            #expect(rows.last?[2] == String(t.history[1].count), "\(rows)")
            #expect(try await backend.history().map(\.changes) == t.history)
        } catch {
            await backend.close()
            throw error
        }
        await backend.close()
    }

    @Test("a checkpoint commits with its save's records, and goes with them when the save fails")
    func checkpoints() async throws {
        for name in Backends.names {
            let backend = try await Backends.open(name, entities: [Self.trip()])
            do {
                _ = try await backend.write(
                    Self.batch([Self.row("T1")]), policy: .upsert, checkpoint: [1, 2, 3], job: "j1")
                #expect(try await backend.checkpoint(job: "j1") == [1, 2, 3], "\(name)")
                await #expect(throws: DepotError.self, "\(name)") {
                    _ = try await backend.write(
                        Self.batch([Self.row("T2"), Self.row("T1")]), policy: .fail,
                        checkpoint: [9], job: "j1")
                }
                #expect(try await backend.checkpoint(job: "j1") == [1, 2, 3], "\(name)")
                #expect(try await backend.records("Trip").count == 1, "\(name)")
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
    }
}
