import DepotEngine
import Foundation
import Testing

/// Key paths (DESIGN §12) in predicates, sort and group_by, checked against
/// answers computed from the generated shop in memory.
@Suite("Relationships: key paths")
struct KeyPathTests {
    static func store(_ shop: GeneratedShop) async throws -> TemporaryStore {
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve(RelationshipTests.shop()))
        try await shop.load(into: t.store)
        return t
    }

    func ids(_ t: TemporaryStore, _ entity: String, _ predicate: String) async throws -> Set<String> {
        let found = try await t.store.reader.identifiers(FetchDescriptor(entity: entity, where: predicate))
        return Set(
            found.map { id in
                id.values.map { v -> String in
                    switch v {
                    case .string(let s): s;
                    case .int(let i): String(i);
                    default: "\(v)"
                    }
                }.joined(separator: "/")
            })
    }

    @Test(
        "to-one paths of any depth, ANY/ALL/NONE, @count/@sum/@avg/@min/@max and SUBQUERY select what the oracle says")
    func predicates() async throws {
        let shop = GeneratedShop(seed: 12, customers: 1_000, orders: 3_000, dangling: 20)
        let t = try await Self.store(shop)
        let customers = shop.customerByID, lines = shop.linesByOrder, orders = shop.ordersByCustomer
        func orderIDs(_ keep: (GeneratedShop.Order, GeneratedShop.Customer?, [GeneratedShop.Line]) -> Bool) -> Set<
            String
        > {
            Set(shop.orders.filter { keep($0, $0.customer.flatMap { customers[$0] }, lines[$0.id] ?? []) }.map(\.id))
        }
        let cases: [(String, Set<String>)] = [
            ("customer.country == 'FR'", orderIDs { _, c, _ in c?.country == "FR" }),
            // nil != "FR": an order with no customer, or a customer with no country, matches.
            ("customer.country != 'FR'", orderIDs { _, c, _ in c?.country != "FR" }),
            ("customer.country == nil", orderIDs { _, c, _ in c?.country == nil }),
            ("customer.name BEGINSWITH[c] 'a'", orderIDs { _, c, _ in c?.name.lowercased().hasPrefix("a") == true }),
            (
                "customer.name BEGINSWITH[cd] 'e'",
                orderIDs { _, c, _ in
                    c.map {
                        $0.name.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).hasPrefix("e")
                    } == true
                }
            ),
            (
                "customer.country IN {'DE', 'IT'} AND total > 500",
                orderIDs { o, c, _ in ["DE", "IT"].contains(c?.country) && o.total > 500 }
            ),
            // NOT keeps SQL's three-valued logic, as for a field: an unknown comparison stays unknown.
            (
                "NOT (customer.country == 'ES' OR customer == nil)",
                orderIDs { _, c, _ in c?.country != nil && c?.country != "ES" }
            ),
            ("ANY lines.qty > 7", orderIDs { _, _, l in l.contains { $0.qty > 7 } }),
            ("SOME lines.sku IN {'A', 'B'}", orderIDs { _, _, l in l.contains { ["A", "B"].contains($0.sku) } }),
            ("ALL lines.qty > 2", orderIDs { _, _, l in l.allSatisfy { $0.qty > 2 } }),
            ("NONE lines.price < 1.0", orderIDs { _, _, l in !l.contains { $0.price < 1.0 } }),
            ("NOT ANY lines.qty > 7", orderIDs { _, _, l in !l.contains { $0.qty > 7 } }),
            ("lines.@count >= 3", orderIDs { _, _, l in l.count >= 3 }),
            ("lines.@count == 0", orderIDs { _, _, l in l.isEmpty }),
            ("lines.@sum.price > 40", orderIDs { _, _, l in l.reduce(0) { $0 + $1.price } > 40 }),
            ("lines.@sum.qty <= 4", orderIDs { _, _, l in l.reduce(0) { $0 + $1.qty } <= 4 }),
            (
                "lines.@avg.qty > 6",
                orderIDs { _, _, l in !l.isEmpty && Double(l.reduce(0) { $0 + $1.qty }) / Double(l.count) > 6 }
            ),
            ("lines.@min.price < 2", orderIDs { _, _, l in (l.map(\.price).min() ?? .infinity) < 2 }),
            ("lines.@max.qty == 9", orderIDs { _, _, l in l.map(\.qty).max() == 9 }),
            (
                "SUBQUERY(lines, $l, $l.qty > 2 AND $l.price < 10).@count > 0",
                orderIDs { _, _, l in l.contains { $0.qty > 2 && $0.price < 10 } }
            ),
            (
                "SUBQUERY(lines, $l, $l.sku == 'C').@count >= 2",
                orderIDs { _, _, l in l.filter { $0.sku == "C" }.count >= 2 }
            )
        ]
        for (predicate, expected) in cases {
            do {
                let found = try await ids(t, "Order", predicate)
                let extra = found.subtracting(expected).sorted().prefix(5),
                    missing = expected.subtracting(found).sorted().prefix(5)
                #expect(
                    extra.isEmpty && missing.isEmpty,
                    "\(predicate): \(extra) found, not expected; \(missing) expected, not found")
            } catch {
                Issue.record(Comment(rawValue: "\(predicate): \(error)"))
            }
        }
        // Field against field across a relationship, and a bare path inside a SUBQUERY.
        #expect(
            try await ids(t, "Order", "SUBQUERY(lines, $l, $l.price > 20 AND total > 900).@count > 0")
                == orderIDs { o, _, l in o.total > 900 && l.contains { $0.price > 20 } })
        #expect(
            try await ids(t, "Order", "ANY lines.price > total")
                == orderIDs { o, _, l in l.contains { $0.price > o.total } })
        // Two hops, to-one then to-one, from the line.
        let orderByID = Dictionary(uniqueKeysWithValues: shop.orders.map { ($0.id, $0) })
        #expect(
            try await ids(t, "OrderLine", "order.customer.country == 'DE' AND qty >= 5")
                == Set(
                    shop.lines.filter { l in
                        orderByID[l.order]!.customer.flatMap { customers[$0]?.country } == "DE" && l.qty >= 5
                    }.map { "\($0.order)/\($0.line)" }))
        // Two to-many hops from the customer, and a count of a to-many.
        #expect(
            try await ids(t, "Customer", "ANY orders.lines.qty == 9")
                == Set(
                    shop.customers.filter { c in
                        (orders[c.id] ?? []).contains { (lines[$0.id] ?? []).contains { $0.qty == 9 } }
                    }.map(\.id)))
        #expect(
            try await ids(t, "Customer", "orders.@count == 0")
                == Set(shop.customers.filter { orders[$0.id] == nil }.map(\.id)))
        #expect(
            try await ids(t, "Customer", "orders.@sum.total > 5000")
                == Set(shop.customers.filter { (orders[$0.id] ?? []).reduce(0) { $0 + $1.total } > 5000 }.map(\.id)))
        // Counts and batch writes take key paths too.
        #expect(
            try await t.store.reader.count(FetchDescriptor(entity: "Order", where: "customer.country == 'IT'"))
                == orderIDs { _, c, _ in c?.country == "IT" }.count)
    }

    @Test("sort by a to-one path (nulls first ascending) and group aggregates by one")
    func sortAndGroup() async throws {
        let shop = GeneratedShop(seed: 7, customers: 50, orders: 400, dangling: 10)
        let t = try await Self.store(shop)
        let customers = shop.customerByID
        var descriptor = FetchDescriptor(entity: "Order", sort: [SortDescriptor("customer.name"), SortDescriptor("id")])
        descriptor.fields = ["id"]
        let sorted = try await t.store.reader.fetch(descriptor).rows.map { $0[0] }
        let expected = shop.orders.sorted { a, b in
            let x = a.customer.flatMap { customers[$0]?.name }, y = b.customer.flatMap { customers[$0]?.name }
            if x != y {
                guard let x else { return true }
                guard let y else { return false }
                return x.utf8.lexicographicallyPrecedes(y.utf8)
            }
            return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }.map { Value.string($0.id) }
        #expect(sorted == expected)
        // Sorted by the number of lines, descending.
        descriptor.sort = [SortDescriptor("lines.@count", descending: true), SortDescriptor("id")]
        let byLines = try await t.store.reader.fetch(descriptor).rows.map { $0[0] }
        let counts = shop.linesByOrder.mapValues(\.count)
        #expect(
            byLines
                == shop.orders.sorted { a, b in
                    let x = counts[a.id] ?? 0, y = counts[b.id] ?? 0
                    return x != y ? x > y : a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
                }.map { Value.string($0.id) })
        // Totals by the customer's country.
        let result = try await t.store.reader.aggregate(
            AggregateRequest(
                entity: "Order", field: "total",
                functions: [.count, .sum], groupBy: ["customer.country"]))
        var oracle: [String?: (Int, Double)] = [:]
        for o in shop.orders {
            let key = o.customer.flatMap { customers[$0]?.country }
            oracle[key, default: (0, 0)].0 += 1
            oracle[key, default: (0, 0)].1 += o.total
        }
        #expect(result.rows.count == oracle.count)
        for row in result.rows {
            let key: String? = if case .string(let s) = row.groups[0] { s } else { nil }
            #expect(row.values[0] == .int(Int64(oracle[key]!.0)), "\(key ?? "nil")")
            #expect(row.values[1] == .double(oracle[key]!.1), "\(key ?? "nil")")
        }
    }

    @Test("batch updates and deletes select by key paths")
    func batchWrites() async throws {
        let shop = GeneratedShop(seed: 3, customers: 40, orders: 300)
        let t = try await Self.store(shop)
        let customers = shop.customerByID
        let french = shop.orders.filter { $0.customer.flatMap { customers[$0]?.country } == "FR" }
        let updated = try await t.store.update(
            entity: "Order", where: "customer.country == 'FR'", set: ["total": 1.0],
            author: "test")
        #expect(updated.updated + updated.unchanged == french.count)
        #expect(try await ids(t, "Order", "total == 1.0") == Set(french.map(\.id)))
        let lines = shop.linesByOrder
        let big = shop.orders.filter { (lines[$0.id] ?? []).count >= 4 }
        let deleted = try await t.store.delete(entity: "Order", where: "lines.@count >= 4", author: "test")
        // The orders' lines cascade, and count.
        #expect(deleted.deleted == big.count + big.reduce(0) { $0 + (lines[$1.id]?.count ?? 0) })
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Order")) == shop.orders.count - big.count)
    }

    @Test("mistakes in key paths are errors with their positions")
    func mistakes() async throws {
        let t = try await Self.store(GeneratedShop(seed: 1, customers: 2, orders: 2))
        func error(_ predicate: String, entity: String = "Order") async -> DepotError? {
            do {
                _ = try await t.store.reader.count(FetchDescriptor(entity: entity, where: predicate))
                return nil
            } catch let e as DepotError { return e } catch { return nil }
        }
        let cases: [(String, DepotError.Code, Int, String)] = [
            (
                "total > 1 AND custmer.name == 'a'", .unknownField, 15,
                #"has no field or relationship "custmer" (did you mean "customer"?)"#
            ),
            (
                "customer.nme == 'a'", .unknownField, 1,
                #"entity "Customer" has no field or relationship "nme" (did you mean "name"?)"#
            ),
            (
                "lines.qty > 5", .invalidPredicate, 1,
                #""lines" is a to-many relationship of "Order": say ANY lines.qty"#
            ),
            (
                "customer == 'x' OR lines == 3", .invalidPredicate, 20,
                #""lines" is a relationship: compare one of its fields"#
            ),
            ("ANY total > 5", .invalidPredicate, 5, "ANY needs a key path through a to-many relationship"),
            ("total.@count > 1", .invalidPredicate, 1, #""total" is a field of "Order", not a relationship"#),
            ("customer.@count > 1", .invalidPredicate, 1, "@count applies to a to-many relationship"),
            ("lines.@sum.sku > 1", .typeMismatch, 1, #"@sum needs a numeric field, but "sku""#),
            ("lines.@median.qty > 1", .invalidPredicate, 1, "unknown collection operator @median"),
            ("lines.@sum > 1", .unknownField, 1, "@sum needs a field of \"OrderLine\" after it"),
            ("customer.country > 5", .typeMismatch, 20, #"field "customer.country" is string, but an integer 5"#),
            (
                "SUBQUERY(total, $x, $x.qty > 1).@count > 0", .invalidPredicate, 10,
                "SUBQUERY goes over a to-many relationship"
            ),
            ("SUBQUERY(lines, $l, $l.qty > 1) > 0", .invalidPredicate, 33, "follow it with .@count"),
            ("SUBQUERY(lines, $l, $l.qtty > 1).@count > 0", .unknownField, 21, #"(did you mean "qty"?)"#),
            ("SUBQUERY(lines, $l, $l > 1).@count > 0", .invalidPredicate, 21, "$l is a record of \"OrderLine\""),
            (
                "total > 1 OR ANY " + String(repeating: "customer.orders.", count: 17) + "total > 1", .invalidPredicate,
                18,
                "the key path goes through more than 32 relationships"
            ),
            (
                "SUBQUERY(lines, $l, SUBQUERY(lines, $l, $l.qty > 1).@count > 0).@count > 0", .invalidPredicate, 21,
                "$l is already the variable of an enclosing SUBQUERY"
            )
        ]
        for (predicate, code, position, message) in cases {
            let e = await error(predicate)
            #expect(e?.code == code, "\(predicate): \(String(describing: e))")
            #expect(e?.position == position, "\(predicate): \(String(describing: e))")
            #expect(e?.message.contains(message) == true, "\(predicate): \(e?.message ?? "no error")")
        }
        // Fields named like the keywords still read.
        let declarations = [
            EntityDeclaration(
                name: "Q",
                fields: [
                    Field(name: "id", type: .string), Field(name: "any", type: .int),
                    Field(name: "subquery", type: .int)
                ], identifier: ["id"])
        ]
        let q = try await TemporaryStore(entities: try EntityDeclaration.resolve(declarations))
        #expect(
            try await q.store.reader.count(
                FetchDescriptor(entity: "Q", where: "any == 1 OR subquery > 2 OR any IN {3}")) == 0)
    }

    @Test("a live fetch whose key paths read another entity follows that entity's changes too")
    func liveFetch() async throws {
        let t = try await RelationshipTests.filledShop(orders: .cascade)
        let feed = try ResultFeed(
            reader: t.store.reader,
            FetchDescriptor(
                entity: "Order", where: "customer.name BEGINSWITH 'B'",
                fields: ["id", "total"]))
        let (_, first) = try await feed.start()
        #expect(first.rows.map { $0[0] } == ["O3"])
        // Ada becomes Bea: her orders enter; nothing of the orders changed.
        _ = try await t.store.update(entity: "Customer", where: "id == 'C1'", set: ["name": "Bea"], author: "test")
        var changes = try await feed.changes()
        #expect(Set(changes.inserted.rows.map { $0[0] }) == ["O1", "O2"])
        #expect(changes.updated.rows.isEmpty && changes.deleted.isEmpty)
        // An order's own change still counts; an order whose customer is cleared leaves.
        _ = try await t.store.update(entity: "Order", where: "id == 'O1'", set: ["total": 11.0], author: "test")
        changes = try await feed.changes()
        #expect(changes.updated.rows == [["O1", 11.0]] && changes.inserted.rows.isEmpty)
        _ = try await t.store.update(entity: "Order", where: "id == 'O2'", set: ["customer": nil], author: "test")
        changes = try await feed.changes()
        #expect(changes.deleted == [Identifier(["O2"])])
        // Bob goes, and O3 with him (cascade): it leaves once.
        _ = try await t.store.delete(entity: "Customer", where: "id == 'C2'", author: "test")
        changes = try await feed.changes()
        #expect(
            changes.deleted == [Identifier(["O3"])] && changes.inserted.rows.isEmpty && changes.updated.rows.isEmpty)
        // A change to an unrelated customer's record leaves the result alone.
        _ = try await t.store.update(entity: "Customer", where: "id == 'C1'", set: ["country": "FR"], author: "test")
        changes = try await feed.changes()
        #expect(changes.isEmpty)
    }
}
