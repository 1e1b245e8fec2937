import DepotEngine
import Dispatch
import Testing

@Suite("Fetch, count, identifiers, sections, enumerate")
struct FetchTests {
    func ids(_ t: TemporaryStore, sort: [SortDescriptor]) async throws -> [String] {
        try await t.store.reader.identifiers(FetchDescriptor(entity: "Trip", sort: sort)).map {
            guard case .string(let s) = $0.values[0] else { return "?" }
            return s
        }
    }

    @Test("nil sorts first ascending and last descending, unless told otherwise")
    func nilOrdering() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        // Binary text order: "Paris" < "Rome" < "Zürich" < "zurich"; ties keep storage order.
        #expect(try await ids(t, sort: [.init("destination")]) == ["t4", "t1", "t5", "t3", "t2", "t6"])
        #expect(
            try await ids(t, sort: [.init("destination", descending: true)])
                == ["t6", "t2", "t3", "t1", "t5", "t4"])
        #expect(try await ids(t, sort: [.init("destination", nulls: .last)]) == ["t1", "t5", "t3", "t2", "t6", "t4"])
        #expect(
            try await ids(t, sort: [.init("destination", descending: true, nulls: .first)])
                == ["t4", "t6", "t2", "t3", "t1", "t5"])
        #expect(try await ids(t, sort: [.init("endDate")]) == ["t3", "t4", "t6", "t2", "t1", "t5"])
        #expect(
            try await ids(t, sort: [.init(parsing: "destination"), .init(parsing: "-budget")])
                == ["t4", "t5", "t1", "t3", "t2", "t6"])
        await #expect(throws: DepotError.self) { try await ids(t, sort: [.init("nope")]) }
    }

    @Test("limit, offset and fields page and trim the results")
    func paging() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let page = try await t.store.reader.fetch(
            FetchDescriptor(entity: "Trip", sort: [.init("id")], limit: 2, offset: 3, fields: ["id", "budget"]))
        #expect(page.fields.map(\.name) == ["id", "budget"])
        #expect(page.rows == [["t4", .double(0)], ["t5", .double(2500.5)]])
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip", where: "budget > 0")) == 5)
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip", where: "budget > 0", limit: 2)) == 2)
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip", offset: 4)) == 2)
        await #expect(throws: DepotError.self) {
            try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", limit: -1))
        }
        await #expect(throws: DepotError.self) {
            try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", fields: ["id", "cost"]))
        }
    }

    @Test("records read back with their types, and as JSON objects")
    func recordsAndJSON() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let r = try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", where: "id == 't3'"))
        #expect(r.rows[0] == TemporaryStore.sampleTrips[2])
        #expect(
            r.jsonObject(row: 0) == #"{"id":"t3","name":"Rome weekend","destination":"Rome","#
                + #""startDate":"2025-05-02","endDate":null,"budget":700.0,"isFavorite":true,"#
                + #""notes":"Colosseum, \"Trevi\""}"#)
    }

    @Test("sections group by a field that becomes the primary sort")
    func sections() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let sections = try await t.store.reader.fetchSections(
            FetchDescriptor(
                entity: "Trip", sort: [.init("budget", descending: true)], fields: ["id"],
                sectionBy: "destination"))
        #expect(sections.map(\.key) == [.null, "Paris", "Rome", "Zürich", "zurich"])
        #expect(sections[1].records.rows.map { $0[1] } == ["t5", "t1"])
        #expect(sections[1].records.fields.map(\.name) == ["destination", "id"])
    }

    @Test("enumerate walks every matching record once, in batches, by key")
    func enumerate() async throws {
        let t = try await TemporaryStore()
        let total = 12_345
        var batch = RecordBatch(entity: "Trip", columns: ["id", "name", "startDate", "budget", "isFavorite"])
        for i in 0..<total {
            batch.append([.string("e\(i)"), "n", "2025-01-01", .double(Double(i % 200)), .bool(i % 2 == 0)])
        }
        let frozen = batch
        _ = try await t.store.save(author: "t") { try $0.write(frozen, policy: .upsert) }
        var seen = Set<String>()
        var batches = 0
        for try await records in t.store.reader.enumerate(
            FetchDescriptor(entity: "Trip", where: "budget >= 100", fields: ["id"]), batchSize: 1_000)
        {
            batches += 1
            #expect(records.count <= 1_000)
            for row in records.rows { if case .string(let s) = row[0] { seen.insert(s) } }
        }
        let expected = (0..<total).filter { $0 % 200 >= 100 }.count
        #expect(seen.count == expected)
        #expect(batches == (expected + 999) / 1_000)
    }

    @Test("reads never wait for a running save, and see the last commit only")
    func readsDuringWrite() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        var big = RecordBatch(entity: "Trip", columns: ["id", "name", "startDate", "budget", "isFavorite"])
        for i in 0..<20_000 { big.append([.string("w\(i)"), "n", "2025-01-01", 1.0, false]) }
        let frozen = big
        let (inside, insideContinuation) = AsyncStream<Void>.makeStream()
        let readsDone = DispatchSemaphore(value: 0)
        let store = t.store
        let saving = Task {
            try await store.save(author: "writer") { save -> Int in
                let counts = try save.write(frozen, policy: .upsert)
                insideContinuation.yield()
                // Hold the write transaction open until the reads are done. If
                // a read waited for this save, it would never finish. The
                // bound is generous: on two cores, the daemon tests running
                // alongside can keep the reads from being scheduled for a
                // minute (it happened under a fuzzing run).
                guard readsDone.wait(timeout: .now() + 300) == .success else {
                    throw DepotError(.database, "the readers were blocked by the writer")
                }
                return counts.inserted
            }
        }
        for await _ in inside { break }
        async let a = store.reader.count(FetchDescriptor(entity: "Trip"))
        async let b = store.reader.fetch(FetchDescriptor(entity: "Trip", where: "budget > 1000"))
        async let c = store.reader.history()
        let (count, fetched, history) = try await (a, b, c)
        readsDone.signal()
        #expect(count == 6)
        #expect(fetched.count == 2)
        #expect(history.count == 1)
        #expect(try await saving.value.value == 20_000)
        #expect(try await store.reader.count(FetchDescriptor(entity: "Trip")) == 20_006)
    }
}
