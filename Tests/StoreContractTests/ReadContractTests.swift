import ChildProcessSupport
import DepotEngine
import DepotPostgres
import Foundation
import Synchronization
import Testing

/// Aggregates, duplicates and exports through the daemon's store contract
/// (``StoreBackend``) on both backends: each answer is checked by hand on
/// a few values and then compared whole between SQLite and PostgreSQL.
@Suite("Read contract: aggregates, duplicates, export on SQLite and PostgreSQL")
struct ReadContractTests {
    /// `body`'s answer on a store of every backend holding the sample
    /// trips, then `extra` rows, in identifier order; by backend name.
    static func onEveryBackend<T: Sendable>(extra: [[Value]] = [], _ body: (any StoreBackend) async throws -> T)
        async throws -> [(String, T)]
    {
        try await Backends.answers(entities: [TestEntities.trip(values: true)]) { backend in
            var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
            for row in PredicateContract.sampleTrips + extra { batch.append(row) }
            _ = try await backend.write(batch)
            return try await body(backend.contract)
        }
    }

    static let aggregates: [AggregateRequest] = [
        AggregateRequest(entity: "Trip"),
        AggregateRequest(entity: "Trip", field: "budget"),
        AggregateRequest(entity: "Trip", field: "budget", groupBy: ["destination"]),
        AggregateRequest(entity: "Trip", field: "name", groupBy: ["isFavorite"]),
        AggregateRequest(
            entity: "Trip", field: "isFavorite", functions: [.count, .min, .max], groupBy: ["destination"]),
        AggregateRequest(entity: "Trip", field: "endDate", where: "budget >= $b", arguments: ["b": 900]),
        AggregateRequest(entity: "Trip", field: "budget", functions: [.sum, .avg], where: "destination == nil"),
        AggregateRequest(entity: "Trip", field: "budget", where: "name BEGINSWITH[c] 'zz'"),
        AggregateRequest(entity: "Trip", groupBy: ["budget"])
    ]

    /// Issue 35, item 8: a fetch of any size streams a chunk at a time.
    @Test("a streamed fetch writes what the page in memory holds, sorted and paged, on each backend")
    func streamedFetch() async throws {
        // 20,000 more trips: more than one chunk of either backend.
        var extra: [[Value]] = []
        for i in 0..<20_000 {
            let destination: Value = i % 3 == 0 ? .null : .string("City \(i % 7)")
            let row: [Value] = [
                .string("x\(i)"), .string("Trip \(i)"), destination, .string("2025-04-01"),
                .null, .double(Double(i % 500)), .bool(i % 2 == 0), .null
            ]
            extra.append(row)
        }
        let descriptors = [
            FetchDescriptor(entity: "Trip"),
            FetchDescriptor(
                entity: "Trip", where: "budget > 100",
                sort: [DepotEngine.SortDescriptor("budget", descending: true), DepotEngine.SortDescriptor("id")],
                limit: 15_000, offset: 7),
            FetchDescriptor(entity: "Trip", where: "id == 'none'"),
            FetchDescriptor(
                entity: "Trip", sort: [DepotEngine.SortDescriptor("destination")], fields: ["id", "destination"])
        ]
        let answers = try await Self.onEveryBackend(extra: extra) { store in
            var pairs: [(streamed: [UInt8], whole: [UInt8])] = []
            for descriptor in descriptors {
                let streamed = Mutex<[UInt8]>([])
                let chunks = Mutex(0)
                try await store.reads.fetchJSON(descriptor) { bytes in
                    streamed.withLock { $0 += bytes }
                    chunks.withLock { $0 += 1 }
                }
                pairs.append((streamed.withLock { $0 }, try await store.reads.fetchJSONBytes(descriptor)))
                if descriptor.limit == nil && descriptor.predicate == nil && descriptor.fields == nil {
                    #expect(chunks.withLock { $0 } > 1, "the whole store came in one chunk")
                }
            }
            return pairs.map { [$0.streamed, $0.whole] }
        }
        for (name, pairs) in answers {
            for (i, pair) in pairs.enumerated() {
                #expect(pair[0] == pair[1], "\(name), descriptor \(i)")
                let records = (try? JSONSerialization.jsonObject(with: Data(pair[0]))) as? [[String: Any]]
                #expect(records != nil, "\(name), descriptor \(i): not a JSON array")
            }
            #expect(((try? JSONSerialization.jsonObject(with: Data(pairs[0][0]))) as? [Any])?.count == 20_006)
        }
    }

    @Test("aggregates: the same rows on each backend, nulls first, text by bytes")
    func aggregate() async throws {
        let answers = try await Self.onEveryBackend { store in
            var results: [AggregateResult] = []
            for request in Self.aggregates { results.append(try await store.reads.aggregate(request)) }
            return results
        }
        for (name, results) in answers {
            // Worked out by hand from the sample trips.
            #expect(results[0].rows.map(\.values) == [[6]], "\(name)")
            #expect(results[1].rows.map(\.values) == [[6, 6600.5, .double(6600.5 / 6), 0.0, 2500.5]], "\(name)")
            #expect(results[2].rows.map(\.groups) == [[nil], ["Paris"], ["Rome"], ["Zürich"], ["zurich"]], "\(name)")
            #expect(results[2].rows[1].values == [2, 4000.5, 2000.25, 1500.0, 2500.5], "\(name)")
            #expect(results[3].rows.map(\.groups) == [[false], [true]], "\(name)")
            #expect(results[3].rows[1].values == [3, "Paris in spring", "ZURICH again"], "\(name)")
            #expect(results[4].rows[1].values == [2, false, true], "\(name)")
            #expect(results[5].rows.map(\.values) == [[3, "2025-02-12", "2025-07-30"]], "\(name)")
            #expect(results[6].rows.map(\.values) == [[0.0, 0.0]], "\(name)")
            #expect(results[7].rows.map(\.values) == [[0, nil, nil, nil, nil]], "\(name)")
            // Numbers group and sort as numbers, not as their text.
            #expect(results[8].rows.map(\.groups) == [[0.0], [700.0], [900.0], [1000.0], [1500.0], [2500.5]], "\(name)")
        }
        for (name, results) in answers.dropFirst() {
            #expect(results == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }

    @Test("aggregates refuse alike: sum of text, an unknown field, a bad predicate")
    func aggregateRefusals() async throws {
        let answers = try await Self.onEveryBackend { store in
            var errors: [String] = []
            for request in [
                AggregateRequest(entity: "Trip", field: "name", functions: [.sum]),
                AggregateRequest(entity: "Trip", field: "nope"),
                AggregateRequest(entity: "Trip", functions: [.max]),
                AggregateRequest(entity: "Trip", field: "budget", where: "budget >")
            ] {
                do {
                    _ = try await store.reads.aggregate(request)
                    errors.append("no error")
                } catch let error as DepotError {
                    errors.append("\(error.code): \(error.message)")
                }
            }
            return errors
        }
        for (name, errors) in answers {
            #expect(errors.allSatisfy { $0 != "no error" }, "\(name): \(errors)")
            #expect(errors == answers[0].1, "\(name)")
        }
    }

    @Test("a fetch of every field sorts numbers as numbers and pages alike")
    func sortedFetch() async throws {
        let answers = try await Self.onEveryBackend { store in
            var out: [[[Value]]] = []
            for d in [
                FetchDescriptor(entity: "Trip", sort: [SortDescriptor("budget", descending: true)]),
                FetchDescriptor(
                    entity: "Trip", sort: [SortDescriptor("isFavorite"), SortDescriptor("budget")],
                    limit: 3, offset: 1)
            ] {
                out.append(try await store.reads.fetch(d).rows)
            }
            return out
        }
        for (name, out) in answers {
            #expect(out[0].map { $0[0] } == ["t5", "t1", "t6", "t2", "t3", "t4"], "\(name)")
            #expect(out[1].map { $0[0] } == ["t2", "t5", "t3"], "\(name)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }

    /// Rows that duplicate the samples' names and destinations.
    static let twins: [[Value]] = [
        ["t7", "Paris in spring", "Paris", "2025-04-01", nil, 10.0, false, nil],
        ["t8", "Rome weekend", "Rome", "2025-05-03", nil, 20.0, true, nil],
        ["t9", "Paris in spring", "Paris", "2026-04-01", nil, 30.0, false, nil],
        ["u1", "Test trip", nil, "2024-12-31", nil, 0.0, false, nil]
    ]

    @Test("duplicates: groups in the order of their values, nulls never alike, limits")
    func duplicates() async throws {
        let answers = try await Self.onEveryBackend(extra: Self.twins) { store in
            var out: [[DuplicateGroup]] = []
            for (by, predicate, limit) in [
                (["name"], nil, nil), (["name", "destination"], nil, nil),
                (["destination"], "budget < 1000", nil), (["name"], nil, 1),
                (["isFavorite"], nil, nil)
            ] as [([String], String?, Int?)] {
                let groups = Mutex<[DuplicateGroup]>([])
                try store.reads.checkDuplicates(entity: "Trip", by: by, where: predicate, arguments: [:], limit: limit)
                try await store.reads.duplicates(entity: "Trip", by: by, where: predicate, arguments: [:], limit: limit)
                { g in
                    groups.withLock { $0.append(g) }
                }
                out.append(groups.withLock { $0 })
            }
            return out
        }
        for (name, groups) in answers {
            #expect(groups[0].map(\.values) == [["Paris in spring"], ["Rome weekend"], ["Test trip"]], "\(name)")
            #expect(groups[0][0].identifiers == [Identifier(["t1"]), Identifier(["t7"]), Identifier(["t9"])], "\(name)")
            // Test trip's destination is null: not a duplicate by destination.
            #expect(groups[1].map(\.values) == [["Paris in spring", "Paris"], ["Rome weekend", "Rome"]], "\(name)")
            #expect(groups[2].map(\.values) == [["Paris"], ["Rome"]], "\(name)")
            #expect(groups[3].count == 1, "\(name)")
            #expect(groups[4].map(\.values) == [[false], [true]], "\(name)")
        }
        for (name, groups) in answers.dropFirst() {
            #expect(groups == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }

    @Test("export: CSV and NDJSON byte for byte alike, fields and predicates applied, counts reported")
    func export() async throws {
        let answers = try await Self.onEveryBackend { store in
            var out: [String] = []
            for (format, descriptor) in [
                (RecordFormat.csv, FetchDescriptor(entity: "Trip")),
                (.ndjson, FetchDescriptor(entity: "Trip")),
                (
                    .csv,
                    FetchDescriptor(
                        entity: "Trip", where: "budget > 800",
                        fields: ["id", "notes", "isFavorite"])
                ),
                (.ndjson, FetchDescriptor(entity: "Trip", where: "destination == nil"))
            ] {
                let bytes = Mutex<[UInt8]>([])
                let reported = Mutex(0)
                let count = try await store.reads.export(
                    descriptor, as: format,
                    write: { chunk in
                        bytes.withLock { $0 += chunk }
                    }, progress: { n in reported.withLock { $0 = n } })
                #expect(reported.withLock { $0 } == count)
                out.append("\(count)\n" + String(decoding: bytes.withLock { $0 }, as: UTF8.self))
            }
            return out
        }
        for (name, texts) in answers {
            #expect(
                texts[0].hasPrefix(
                    "6\nid,name,destination,startDate,endDate,budget,isFavorite,notes,meta\r\n"
                        + "t1,Paris in spring,Paris,2025-04-01,2025-04-08,1500.0,true,Louvre,\r\n"),
                "\(name): \(texts[0])")
            #expect(
                texts[0].contains("t3,Rome weekend,Rome,2025-05-02,,700.0,true,\"Colosseum, \"\"Trevi\"\"\",\r\n"),
                "\(name)")
            #expect(
                texts[2] == "4\nid,notes,isFavorite\r\nt1,Louvre,true\r\nt2,,false\r\nt5,car,false\r\nt6,\"\",true\r\n",
                "\(name): \(texts[2])")
            #expect(
                texts[3].hasPrefix("1\n{\"id\":\"t4\",\"name\":\"Test trip\",\"destination\":null,"),
                "\(name): \(texts[3])")
        }
        for (name, texts) in answers.dropFirst() {
            #expect(texts == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }
}

/// The reference check (DESIGN §12) on both backends, over orders that name
/// customers who have not arrived (kept as an import with
/// `references = "defer"` keeps them). The orders are stored in identifier
/// order: SQLite reports in storage order, PostgreSQL by identifier.
@Suite("Read contract: dangling references on SQLite and PostgreSQL")
struct ReferenceContractTests {
    static func shop() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Customer", fields: [Field(name: "id", type: .string), Field(name: "name", type: .string)],
                identifier: ["id"]),
            EntityDeclaration(
                name: "Order", fields: [Field(name: "id", type: .string), Field(name: "total", type: .double)],
                identifier: ["id"],
                relationships: [Relationship(name: "customer", target: "Customer", kind: .toOne(required: false))])
        ])
    }

    @Test("the same counts and the same dangling references, first by identifier, up to the limit")
    func dangling() async throws {
        let answers = try await Backends.answers(entities: Self.shop()) { backend -> [String] in
            var customers = RecordBatch(entity: "Customer", columns: ["id", "name"])
            customers.append(["c1", "Ada"])
            customers.append(["c2", "Bo"])
            _ = try await backend.write(customers)
            var orders = RecordBatch(entity: "Order", columns: ["id", "total", "customer"])
            for row: [Value] in [["o1", 1.0, "c1"], ["o2", 2.0, "c9"], ["o3", 3.0, nil], ["o4", 4.0, "c8"]] {
                orders.append(row)
            }
            let batch = orders
            if let sqlite = backend as? SQLiteBackend {
                _ = try await sqlite.store.save(author: "test") {
                    try $0.write(batch, policy: .upsert, deferReferences: true)
                }
            } else if let postgres = backend as? PostgresBackend {
                _ = try await postgres.store.withSave(author: "test") {
                    try await $0.write(batch, policy: .upsert, deferReferences: true)
                }
            }
            var out: [String] = []
            for limit in [10, 1, 0] {
                let check = try await backend.contract.reads.danglingReferences(limit: limit)
                let counts: [String] = check.relationships.map { r in
                    "\(r.entity).\(r.relationship)->\(r.target): \(r.dangling)"
                }
                let dangling: [String] = check.dangling.map { d in "\(d.identifier.json)->\(d.reference.json)" }
                out.append("\(counts) total \(check.total) " + dangling.joined(separator: " "))
            }
            return out
        }
        for (name, out) in answers {
            #expect(
                out == [
                    #"["Order.customer->Customer: 2"] total 2 "o2"->"c9" "o4"->"c8""#,
                    #"["Order.customer->Customer: 2"] total 2 "o2"->"c9""#,
                    #"["Order.customer->Customer: 2"] total 2 "#
                ], "\(name): \(out)")
        }
    }
}
