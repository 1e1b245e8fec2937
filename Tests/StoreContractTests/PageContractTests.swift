import ChildProcessSupport
import DepotEngine
import Testing

/// Keyset paging (`after`) and identifier lists (`identifiers`) in the
/// fetch descriptor (DESIGN §4, issue 52 item 4), on both backends: pages
/// after pages give exactly one fetch's order, whatever the sort's
/// directions, ties and nulls; identifiers select exactly their records.
@Suite("Page contract: keyset paging and identifier lists on SQLite and PostgreSQL")
struct PageContractTests {
    static func visit() throws -> EntitySchema {
        try EntitySchema(
            name: "Visit",
            fields: [
                Field(name: "city", type: .string), Field(name: "day", type: .int),
                Field(name: "guests", type: .int, isOptional: true)
            ],
            identifier: ["city", "day"])
    }

    /// The sample trips and 60 more with many equal values and nulls.
    static func load(_ backend: any Backend) async throws {
        var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
        for row in PredicateContract.sampleTrips { batch.append(row) }
        let places: [Value] = [nil, "Paris", "paris", "Zürich", "Rome"]
        for i in 0..<60 {
            batch.append([
                .string("g\(i)"), .string("Trip \(i)"), places[i % 5], .string("2025-03-\(10 + i % 7)"),
                i % 3 == 0 ? nil : .string("2025-04-\(10 + i % 4)"), .double(Double(100 * (i % 4))),
                .bool(i % 2 == 0), i % 6 == 0 ? nil : .string("n\(i % 3)")
            ])
        }
        _ = try await backend.write(batch)
        var visits = RecordBatch(entity: "Visit", columns: ["city", "day", "guests"])
        for i in 0..<30 {
            visits.append([.string(["Rome", "Oslo", "Lima"][i % 3]), .int(Int64(i / 3)), .int(Int64(i))])
        }
        _ = try await backend.write(visits)
    }

    static let sorts: [(sort: [DepotEngine.SortDescriptor], predicate: String?)] = [
        ([SortDescriptor("budget")], nil),
        ([SortDescriptor("budget", descending: true)], nil),
        ([SortDescriptor("destination")], nil),
        ([SortDescriptor("destination", nulls: .last)], nil),
        ([SortDescriptor("destination", descending: true)], nil),
        ([SortDescriptor("destination", descending: true, nulls: .first)], nil),
        ([SortDescriptor("isFavorite"), SortDescriptor("endDate", descending: true)], nil),
        ([SortDescriptor("notes", descending: true), SortDescriptor("startDate")], "budget < 300"),
        ([SortDescriptor("id", descending: true)], nil),
        ([SortDescriptor("destination"), SortDescriptor("budget", descending: true)], "budget > 150")
    ]

    @Test("pages after pages give exactly one fetch's order, for every sort, tie and null, alike on each backend")
    func pagesAddUp() async throws {
        let trip = try TestEntities.trip(values: false)
        let answers = try await Backends.answers(entities: [trip, try Self.visit()]) { backend -> [[String]] in
            try await Self.load(backend)
            var orders: [[String]] = []
            for (sort, predicate) in Self.sorts {
                let whole = FetchContractTests.strings(
                    try await backend.identifiers(FetchDescriptor(entity: "Trip", where: predicate, sort: sort)))
                orders.append(whole)
                for size in [1, 4, 7] {
                    var d = FetchDescriptor(entity: "Trip", where: predicate, sort: sort, limit: size)
                    var paged: [String] = []
                    while true {
                        let page = try await backend.fetch(d)
                        paged += (0..<page.count).map { row -> String in
                            if case .string(let id)? = page.value("id", row: row) { return id }
                            return "?"
                        }
                        guard page.count == size, let after = page.lastValues(of: d.keys(of: trip)) else { break }
                        d.after = after
                        #expect(paged.count <= whole.count, "\(backend.name): \(sort) runs past the end")
                        if paged.count > whole.count { break }
                    }
                    #expect(paged == whole, "\(backend.name): \(sort) where \(predicate ?? "-") in pages of \(size)")
                }
            }
            // A compound identifier pages by both of its fields.
            var d = FetchDescriptor(entity: "Visit", sort: [SortDescriptor("day", descending: true)], limit: 4)
            var visits: [String] = []
            while true {
                let page = try await backend.fetch(d)
                for row in 0..<page.count {
                    let city = page.value("city", row: row)?.text ?? "?"
                    let day = page.value("day", row: row)?.text ?? "?"
                    visits.append(city + "/" + day)
                }
                guard page.count == 4, let after = page.lastValues(of: ["day", "city"]) else { break }
                d.after = after
            }
            orders.append(visits)
            return orders
        }
        // The same records in each order; ties come in each backend's own
        // fixed order (SQLite's rowid, PostgreSQL's identifier).
        let (first, firstOrders) = answers[0]
        for (name, orders) in answers.dropFirst() {
            #expect(orders.map { $0.sorted() } == firstOrders.map { $0.sorted() }, "\(name) unlike \(first)")
        }
        for (name, orders) in answers {
            #expect(orders.last?.count == 30 && Set(orders.last ?? []).count == 30, "\(name)")
            #expect(orders.last?.prefix(3).allSatisfy { $0.hasSuffix("/9") } == true, "\(name): \(orders.last ?? [])")
        }
    }

    @Test("identifiers select exactly their records, under the predicate; mistakes are refused alike")
    func identifierLists() async throws {
        let answers = try await Backends.answers(entities: [try TestEntities.trip(values: false), try Self.visit()]) {
            backend -> [String] in
            try await Self.load(backend)
            var out: [String] = []
            func ids(_ d: FetchDescriptor) async throws -> String {
                FetchContractTests.strings(try await backend.identifiers(d)).joined(separator: ",")
            }
            var d = FetchDescriptor(entity: "Trip", sort: [SortDescriptor("id")])
            d.identifiers = [["t3"], ["t1"], ["nope"], ["g7"]]
            out.append(try await ids(d))
            d.predicate = "budget > 1000"
            out.append(try await ids(d))
            d.predicate = nil
            d.identifiers = []
            out.append(try await ids(d))
            var v = FetchDescriptor(entity: "Visit", sort: [SortDescriptor("city")])
            v.identifiers = [["Oslo", 1], ["Rome", 0], ["Rome", 1], ["Lima", 99]]
            out.append(try await ids(v))
            #expect(try await backend.count(v) == 3)
            // Mistakes.
            var refusals: [FetchDescriptor] = []
            var wrongArity = FetchDescriptor(entity: "Visit")
            wrongArity.identifiers = [["Oslo"]]
            refusals.append(wrongArity)
            var wrongType = FetchDescriptor(entity: "Visit")
            wrongType.identifiers = [["Oslo", "one"]]
            refusals.append(wrongType)
            var tooMany = FetchDescriptor(entity: "Trip")
            tooMany.identifiers = (0...FetchDescriptor.maxIdentifiers).map { [.string("x\($0)")] }
            refusals.append(tooMany)
            var unsorted = FetchDescriptor(entity: "Trip", limit: 2)
            unsorted.after = ["t1"]
            refusals.append(unsorted)
            var short = FetchDescriptor(entity: "Trip", sort: [SortDescriptor("budget")])
            short.after = [100.0]
            refusals.append(short)
            var json = FetchDescriptor(entity: "Trip", sort: [SortDescriptor("meta")])
            json.after = [nil, "t1"]
            refusals.append(json)
            for r in refusals {
                do {
                    _ = try await backend.identifiers(r)
                    out.append("accepted")
                } catch let error as DepotError {
                    out.append("\(error.code): \(error.message)")
                }
            }
            return out
        }
        for (name, out) in answers {
            #expect(out[0] == "g7,t1,t3", "\(name)")
            #expect(out[1] == "t1", "\(name)")
            #expect(out[2] == "", "\(name)")
            #expect(out[3] == "Oslo/1,Rome/0,Rome/1", "\(name)")
            #expect(
                out[4...].allSatisfy { $0.hasPrefix("invalid_argument") || $0.hasPrefix("type_mismatch") },
                "\(name): \(out)")
        }
        #expect(answers[0].1 == answers[1].1)
    }
}
