import ChildProcessSupport
import DepotEngine
import DepotPostgres
import Foundation
import Testing

/// The engine's fetch contract on both backends: the engine's own table of
/// predicates (PredicateContract, whose answers were worked out by hand),
/// its refusals, sorts and pages, and key paths through relationships,
/// compiled for SQLite and for PostgreSQL.
@Suite("Fetch contract: SQLite and PostgreSQL")
struct FetchContractTests {
    /// Runs `body` on a store of each backend holding the sample trips.
    static func onEveryBackend(_ body: (any Backend) async throws -> Void) async throws {
        for name in Backends.names {
            let backend = try await Backends.open(name, entities: [TestEntities.trip(values: false)])
            do {
                var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
                for row in PredicateContract.sampleTrips { batch.append(row) }
                _ = try await backend.write(batch)
                try await body(backend)
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
    }

    static func strings(_ ids: [Identifier]) -> [String] {
        ids.map { id in
            id.values.map { v -> String in
                switch v {
                case .string(let s): s
                case .int(let i): String(i)
                default: "\(v)"
                }
            }.joined(separator: "/")
        }
    }

    @Test("every predicate of the engine's table selects the hand-computed trips on each backend")
    func predicates() async throws {
        try await Self.onEveryBackend { backend in
            for (predicate, expected) in PredicateContract.cases {
                do {
                    let ids = try await backend.identifiers(
                        FetchDescriptor(
                            entity: "Trip", where: predicate,
                            sort: [SortDescriptor("id")]))
                    #expect(Self.strings(ids) == expected, "\(backend.name): \(predicate)")
                    let count = try await backend.count(FetchDescriptor(entity: "Trip", where: predicate))
                    #expect(count == expected.count, "\(backend.name): count of \(predicate)")
                } catch {
                    Issue.record("\(backend.name): \(predicate): \(error)")
                }
            }
            // Placeholders, bound and type-checked.
            let ids = try await backend.identifiers(
                FetchDescriptor(
                    entity: "Trip", where: "startDate >= $from AND endDate < $until",
                    arguments: ["from": "2025-01-01", "until": "2025-05-01"], sort: [SortDescriptor("id")]))
            #expect(Self.strings(ids) == ["t1", "t2"], "\(backend.name)")
        }
    }

    @Test("every refused predicate is refused alike: code, position and message")
    func refusals() async throws {
        try await Self.onEveryBackend { backend in
            for (predicate, code, position, fragment) in PredicateContract.errors {
                let error = await #expect(throws: DepotError.self, "\(backend.name): \(predicate)") {
                    try await backend.identifiers(FetchDescriptor(entity: "Trip", where: predicate))
                }
                #expect(error?.code == code, "\(backend.name): \(predicate)")
                #expect(error?.position == position, "\(backend.name): \(predicate)")
                #expect(
                    error?.message.contains(fragment) == true, "\(backend.name): \(predicate): \(error?.message ?? "")")
            }
        }
    }

    @Test("sorts order text by its bytes and nulls as asked; limits and offsets page alike")
    func orders() async throws {
        try await Self.onEveryBackend { backend in
            for (sort, limit, offset, expected) in PredicateContract.orders {
                let d = FetchDescriptor(entity: "Trip", sort: sort, limit: limit, offset: offset)
                #expect(
                    Self.strings(try await backend.identifiers(d)) == expected,
                    "\(backend.name): \(sort) \(limit ?? -1) \(offset ?? -1)")
                #expect(try await backend.count(d) == expected.count, "\(backend.name): count \(sort)")
            }
            // Fields fetched, in the order asked, with their types.
            let set = try await backend.fetch(
                FetchDescriptor(
                    entity: "Trip", where: "id IN {'t2', 't3'}",
                    sort: [SortDescriptor("id")],
                    fields: ["budget", "id", "isFavorite", "endDate", "notes"]))
            #expect(set.fields.map(\.name) == ["budget", "id", "isFavorite", "endDate", "notes"])
            #expect(
                set.rows == [[900.0, "t2", false, "2025-02-12", nil], [700.0, "t3", true, nil, "Colosseum, \"Trevi\""]],
                "\(backend.name)")
        }
    }

    /// A shop small enough to check by eye: customers, orders (one with
    /// no customer) and their lines.
    static func shop() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Customer",
                fields: [
                    Field(name: "id", type: .string), Field(name: "name", type: .string),
                    Field(name: "country", type: .string, isOptional: true)
                ],
                identifier: ["id"],
                relationships: [
                    Relationship(
                        name: "orders", target: "Order",
                        kind: .toMany(inverse: "customer", delete: .cascade))
                ]),
            EntityDeclaration(
                name: "Order",
                fields: [Field(name: "id", type: .string), Field(name: "total", type: .double)],
                identifier: ["id"],
                relationships: [
                    Relationship(name: "customer", target: "Customer", kind: .toOne(required: false)),
                    Relationship(
                        name: "lines", target: "OrderLine",
                        kind: .toMany(inverse: "order", delete: .cascade))
                ]),
            EntityDeclaration(
                name: "OrderLine",
                fields: [
                    Field(name: "line", type: .int), Field(name: "sku", type: .string),
                    Field(name: "qty", type: .int), Field(name: "price", type: .double)
                ],
                identifier: ["order", "line"],
                relationships: [Relationship(name: "order", target: "Order", kind: .toOne(required: true))])
        ])
    }

    static func loadShop(_ backend: any Backend) async throws {
        var customers = RecordBatch(entity: "Customer", columns: ["id", "name", "country"])
        for row: [Value] in [["c1", "Émile", "FR"], ["c2", "anna", "DE"], ["c3", "Bob", nil]] { customers.append(row) }
        var orders = RecordBatch(entity: "Order", columns: ["id", "total", "customer"])
        for row: [Value] in [
            ["o1", 100.0, "c1"], ["o2", 600.0, "c1"], ["o3", 50.0, "c2"], ["o4", 700.0, nil], ["o6", 10.0, "c3"]
        ] { orders.append(row) }
        var lines = RecordBatch(entity: "OrderLine", columns: ["order", "line", "sku", "qty", "price"])
        for row: [Value] in [
            ["o1", 1, "A", 3, 2.5], ["o1", 2, "C", 8, 12.0], ["o2", 1, "C", 1, 30.0], ["o2", 2, "C", 9, 0.5],
            ["o3", 1, "B", 5, 5.0], ["o6", 1, "B", 3, 40.0]
        ] { lines.append(row) }
        for batch in [customers, orders, lines] {
            let counts = try await backend.write(batch)
            #expect(
                counts.inserted == batch.values.count / batch.columns.count,
                "\(backend.name): \(batch.entity) \(counts)")
        }
    }

    /// Key paths with the orders (or customers, or lines) each selects, by hand.
    static let keyPaths: [(entity: String, predicate: String, ids: [String])] = [
        ("Order", "customer.country == 'FR'", ["o1", "o2"]),
        ("Order", "customer.country != 'FR'", ["o3", "o4", "o6"]),
        ("Order", "customer.country == nil", ["o4", "o6"]),
        ("Order", "customer == nil", ["o4"]),
        ("Order", "customer.name BEGINSWITH[cd] 'e'", ["o1", "o2"]),
        ("Order", "customer.name BEGINSWITH[c] 'A'", ["o3"]),
        ("Order", "NOT (customer.country == 'DE' OR customer == nil)", ["o1", "o2"]),
        ("Order", "ANY lines.qty > 7", ["o1", "o2"]),
        ("Order", "SOME lines.sku IN {'A', 'B'}", ["o1", "o3", "o6"]),
        ("Order", "ALL lines.qty > 2", ["o1", "o3", "o4", "o6"]),
        ("Order", "NONE lines.price < 1.0", ["o1", "o3", "o4", "o6"]),
        ("Order", "lines.@count >= 2", ["o1", "o2"]),
        ("Order", "lines.@count == 0", ["o4"]),
        ("Order", "lines.@sum.price > 14", ["o1", "o2", "o6"]),
        ("Order", "lines.@sum.qty <= 5", ["o3", "o4", "o6"]),
        ("Order", "lines.@avg.qty > 5", ["o1"]),
        ("Order", "lines.@min.price < 2", ["o2"]),
        ("Order", "lines.@max.qty == 9", ["o2"]),
        ("Order", "SUBQUERY(lines, $l, $l.qty > 2 AND $l.price < 10).@count > 0", ["o1", "o2", "o3"]),
        ("Order", "SUBQUERY(lines, $l, $l.sku == 'C').@count >= 2", ["o2"]),
        ("Order", "ANY lines.price > total", ["o6"]),
        ("OrderLine", "order.customer.country == 'FR' AND qty >= 5", ["o1/2", "o2/2"]),
        ("Customer", "ANY orders.lines.qty == 9", ["c1"]),
        ("Customer", "orders.@count == 0", []),
        ("Customer", "orders.@sum.total > 600", ["c1"])
    ]

    @Test(
        "key paths, ANY/ALL/NONE, collection operators and SUBQUERY select alike, as worked out by hand; a dangling reference is refused alike"
    )
    func keyPathPredicates() async throws {
        for name in Backends.names {
            let backend = try await Backends.open(name, entities: try Self.shop())
            do {
                try await Self.loadShop(backend)
                for (entity, predicate, expected) in Self.keyPaths {
                    do {
                        let ids = try await backend.identifiers(FetchDescriptor(entity: entity, where: predicate))
                        #expect(Self.strings(ids).sorted() == expected, "\(name): \(entity) \(predicate)")
                    } catch {
                        Issue.record("\(name): \(entity) \(predicate): \(error)")
                    }
                }
                // Sorting by a to-one's field and by an aggregate.
                let byCountry = try await backend.identifiers(
                    FetchDescriptor(
                        entity: "Order",
                        sort: [SortDescriptor("customer.country", descending: true), SortDescriptor("id")]))
                #expect(Self.strings(byCountry) == ["o1", "o2", "o3", "o4", "o6"], "\(name)")
                let byLines = try await backend.identifiers(
                    FetchDescriptor(
                        entity: "Order",
                        sort: [SortDescriptor("lines.@sum.qty", descending: true), SortDescriptor("id")]))
                #expect(Self.strings(byLines) == ["o1", "o2", "o3", "o6", "o4"], "\(name)")
                // A reference must name a stored record: the row is refused, the rest kept.
                var dangling = RecordBatch(entity: "Order", columns: ["id", "total", "customer"])
                dangling.append(["o5", 20.0, "c9"])
                dangling.append(["o7", 30.0, "c2"])
                let counts = try await backend.write(dangling)
                #expect(counts.inserted == 1 && counts.rejections.map(\.row) == [0], "\(name): \(counts)")
                #expect(counts.rejections.first?.field == "customer", "\(name)")
                #expect(counts.rejections.first?.reason == "no Customer with identifier \"c9\"", "\(name)")
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
    }
}

/// Related records embedded in fetched ones (DESIGN §12: `prefetch`, key
/// paths in `fields`), as the daemon reads them (``StoreReading``), on both
/// backends: the JSON a fetch answers, and a live fetch with changes that
/// embeds them.
@Suite("Fetch contract: embedded related records on SQLite and PostgreSQL")
struct PrefetchContractTests {
    static func prefetching(_ d: FetchDescriptor, _ paths: [String]) -> FetchDescriptor {
        var d = d
        d.prefetch = paths
        return d
    }

    static let descriptors: [FetchDescriptor] = [
        prefetching(FetchDescriptor(entity: "Order", sort: [SortDescriptor("id")]), ["customer", "lines"]),
        FetchDescriptor(
            entity: "Order", where: "total > 60", sort: [SortDescriptor("total", descending: true)],
            fields: ["total", "customer.name", "lines.sku"]),
        prefetching(FetchDescriptor(entity: "Customer", sort: [SortDescriptor("name")]), ["orders.lines"]),
        FetchDescriptor(
            entity: "OrderLine", where: "qty > 2", sort: [SortDescriptor("qty")],
            fields: ["qty", "order.customer.country"])
    ]

    @Test("the same JSON on each backend, to-manys by identifier, a missing to-one as null")
    func embedded() async throws {
        let answers = try await Backends.answers(entities: FetchContractTests.shop()) { backend -> [String] in
            try await FetchContractTests.loadShop(backend)
            var out: [String] = []
            for d in Self.descriptors { out.append(try await backend.contract.reads.fetchJSON(d)) }
            // A live fetch with changes embeds too: a new line of o3 changes o3.
            let feed = try backend.contract.reads.resultFeed(
                Self.prefetching(FetchDescriptor(entity: "Order", where: "total < 60"), ["lines"]))
            _ = try await feed.start()
            var lines = RecordBatch(entity: "OrderLine", columns: ["order", "line", "sku", "qty", "price"])
            lines.append(["o3", 2, "D", 1, 1.0])
            _ = try await backend.write(lines)
            let changes = try await feed.changes()
            out.append(changes.updated.jsonArray())
            return out
        }
        for (name, out) in answers {
            #expect(
                out[0].hasPrefix(
                    #"[{"id":"o1","total":100.0,"customer":{"id":"c1","name":"Émile","country":"FR"},"#
                        + #""lines":[{"line":1,"sku":"A","qty":3,"price":2.5,"order":"o1"},"#), "\(name): \(out[0])")
            #expect(out[0].contains(#"{"id":"o4","total":700.0,"customer":null,"lines":[]}"#), "\(name): \(out[0])")
            #expect(
                out[1] == #"[{"total":700.0,"customer":null,"lines":[]},"#
                    + #"{"total":600.0,"customer":{"name":"Émile"},"lines":[{"sku":"C"},{"sku":"C"}]},"#
                    + #"{"total":100.0,"customer":{"name":"Émile"},"lines":[{"sku":"A"},{"sku":"C"}]}]"#,
                "\(name): \(out[1])")
            #expect(
                out[4].contains(#""lines":[{"line":1,"sku":"B","qty":5,"price":5.0,"order":"o3"},{"line":2,"sku":"D""#),
                "\(name): \(out[4])")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }
}
