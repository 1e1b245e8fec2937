import DepotEngine
import Synchronization
import Testing

@Suite("Aggregates and duplicates")
struct AggregateTests {
    @Test("count, sum, avg, min and max of a field over all records")
    func ungrouped() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let result = try await t.store.reader.aggregate(AggregateRequest(entity: "Trip", field: "budget"))
        #expect(result.functions == [.count, .sum, .avg, .min, .max])
        // 1500 + 900 + 700 + 0 + 2500.5 + 1000
        #expect(
            result.rows == [
                .init(
                    groups: [],
                    values: [
                        6, .double(6600.5), .double(6600.5 / 6), .double(0),
                        .double(2500.5)
                    ])
            ])
        let notes = try await t.store.reader.aggregate(
            AggregateRequest(
                entity: "Trip", field: "notes",
                functions: [.count]))
        #expect(notes.rows[0].values == [4])
        let dates = try await t.store.reader.aggregate(
            AggregateRequest(
                entity: "Trip", field: "startDate",
                functions: [.min, .max]))
        #expect(dates.rows[0].values == ["2024-12-31", "2026-01-05"])
        let records = try await t.store.reader.aggregate(AggregateRequest(entity: "Trip"))
        #expect(records.rows[0].values == [6])
    }

    @Test("grouped and filtered inside SQLite")
    func grouped() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let result = try await t.store.reader.aggregate(
            AggregateRequest(
                entity: "Trip", field: "budget", functions: [.count, .sum], groupBy: ["destination"],
                where: "budget > 0"))
        #expect(result.rows.map(\.groups) == [["Paris"], ["Rome"], ["Zürich"], ["zurich"]])
        #expect(
            result.rows.map(\.values) == [
                [2, .double(4000.5)], [1, .double(700)], [1, .double(900)],
                [1, .double(1000)]
            ])
        let byTwo = try await t.store.reader.aggregate(
            AggregateRequest(
                entity: "Trip", functions: [.count], groupBy: ["isFavorite", "destination"]))
        #expect(byTwo.rows.first?.groups == [false, .null])
        #expect(byTwo.rows.count == 6)
        await #expect(throws: DepotError.self) {
            try await t.store.reader.aggregate(AggregateRequest(entity: "Trip", field: "name", functions: [.sum]))
        }
        await #expect(throws: DepotError.self) {
            try await t.store.reader.aggregate(AggregateRequest(entity: "Trip", field: "budget", groupBy: ["nope"]))
        }
    }

    @Test("duplicate groups list identifiers in storage order; nulls are never duplicates")
    func duplicates() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let byDestination = try await t.store.reader.duplicates(entity: "Trip", by: ["destination"])
        #expect(
            byDestination == [DuplicateGroup(values: ["Paris"], identifiers: [Identifier(["t1"]), Identifier(["t5"])])])
        let byFavorite = try await t.store.reader.duplicates(entity: "Trip", by: ["isFavorite"])
        #expect(
            byFavorite.map { $0.identifiers.map(\.json) } == [
                [#""t2""#, #""t4""#, #""t5""#],
                [#""t1""#, #""t3""#, #""t6""#]
            ])
        let limited = try await t.store.reader.duplicates(
            entity: "Trip", by: ["isFavorite"], where: "budget > 800",
            limit: 1)
        #expect(limited.map { $0.identifiers.map(\.json) } == [[#""t2""#, #""t5""#]])
        await #expect(throws: DepotError.self) { try await t.store.reader.duplicates(entity: "Trip", by: []) }
    }

    @Test("duplicate groups over many records agree with an in-memory oracle, with predicates and limits")
    func duplicatesOracle() async throws {
        let t = try await TemporaryStore()
        // Few destinations and budgets, some null: groups of every size, singletons among them.
        var rng = SystemRandomNumberGenerator()
        let destinations: [String?] = ["Paris", "Rome", "rome", "Zürich", nil]
        var rows: [[Value]] = []
        for i in 0..<3_000 {
            let d = destinations.randomElement(using: &rng)!
            let budget = Double(Int.random(in: 0..<40, using: &rng)) * 12.5
            rows.append([
                .string("t\(i)"), "n", d.map(Value.string) ?? .null, "2025-01-01", nil, .double(budget),
                .bool(Bool.random(using: &rng)), nil
            ])
        }
        try await t.insertTrips(rows)
        func oracle(_ keep: ([Value]) -> Bool) -> [DuplicateGroup] {
            var members: [[Value]: [Identifier]] = [:]
            for row in rows where row[2] != .null && keep(row) {
                members[[row[5], row[2]], default: []].append(Identifier([row[0]]))
            }
            return members.filter { $0.value.count > 1 }.map { DuplicateGroup(values: $0.key, identifiers: $0.value) }
                .sorted { a, b in
                    guard case .double(let x) = a.values[0], case .double(let y) = b.values[0],
                        case .string(let p) = a.values[1], case .string(let q) = b.values[1]
                    else { return false }
                    return x != y ? x < y : Array(p.utf8).lexicographicallyPrecedes(Array(q.utf8))
                }
        }
        let all = try await t.store.reader.duplicates(entity: "Trip", by: ["budget", "destination"])
        #expect(all == oracle { _ in true })
        #expect(!all.isEmpty)
        let favourites = try await t.store.reader.duplicates(
            entity: "Trip", by: ["budget", "destination"],
            where: "isFavorite == true")
        #expect(favourites == oracle { $0[6] == .bool(true) })
        let limited = try await t.store.reader.duplicates(entity: "Trip", by: ["budget", "destination"], limit: 7)
        #expect(limited == Array(all.prefix(7)))
        #expect(try await t.store.reader.duplicates(entity: "Trip", by: ["budget", "destination"], limit: 0).isEmpty)
        // The streaming form hands out the same groups, one at a time.
        let streamed = Mutex<[DuplicateGroup]>([])
        try await t.store.reader.duplicates(entity: "Trip", by: ["budget", "destination"]) { g in
            streamed.withLock { $0.append(g) }
        }
        #expect(streamed.withLock { $0 } == all)
    }

    @Test("resolving duplicates keeps the first or last stored and logs the deletes")
    func resolve() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let first = try await t.store.resolveDuplicates(
            entity: "Trip", by: ["destination"], keep: .keepFirst,
            author: "dedupe")
        #expect(first.deleted == 1)
        #expect(try await t.ids("TRUEPREDICATE") == ["t1", "t2", "t3", "t4", "t6"])
        let last = try await t.store.resolveDuplicates(
            entity: "Trip", by: ["isFavorite"], keep: .keepLast,
            author: "dedupe", batchSize: 1)
        #expect(last.deleted == 3)
        #expect(try await t.ids("TRUEPREDICATE") == ["t4", "t6"])
        let log = try await t.store.reader.history(author: "dedupe").flatMap(\.changes)
        #expect(
            log.map { "\($0.kind.rawValue) \($0.identifier)" }
                == [#"delete "t5""#, #"delete "t1""#, #"delete "t2""#, #"delete "t3""#])
        #expect(try await t.store.reader.duplicates(entity: "Trip", by: ["isFavorite"]).isEmpty)
    }

    @Test("a sum of integers past Int64 is a clear error, not a database failure")
    func sumOverflow() async throws {
        let t = try await TemporaryStore(entities: [
            TemporaryStore.tripEntity(extraFields: [Field(name: "nights", type: .int, isOptional: true)])
        ])
        var batch = RecordBatch(entity: "Trip", columns: TemporaryStore.tripColumns + ["nights"])
        batch.append(["a", "A", nil, "2025-01-01", nil, 1.0, true, nil, .int(Int64.max)])
        batch.append(["b", "B", nil, "2025-01-01", nil, 1.0, true, nil, .int(1)])
        let frozen = batch
        _ = try await t.store.save(author: "test") { try $0.write(frozen, policy: .upsert) }
        let error = await #expect(throws: DepotError.self) {
            try await t.store.reader.aggregate(AggregateRequest(entity: "Trip", field: "nights", functions: [.sum]))
        }
        // 422, with the other aggregates that overflow (issue 51).
        #expect(error?.code == .outOfRange)
        #expect(error?.message.contains("overflows a 64-bit integer") == true)
        let avg = try await t.store.reader.aggregate(
            AggregateRequest(entity: "Trip", field: "nights", functions: [.avg]))
        #expect(avg.rows.count == 1)
    }
}
