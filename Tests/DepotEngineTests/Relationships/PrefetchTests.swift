import Foundation
import GRDB
import Testing

@testable import DepotEngine

/// Prefetch (DESIGN §12): related records embedded in fetched ones, one
/// query per relationship per page, checked against the generated shop.
@Suite("Relationships: prefetch")
struct PrefetchTests {
    /// The records of `descriptor` as JSON objects, and how many statements the fetch ran.
    static func fetch(_ t: TemporaryStore, _ descriptor: FetchDescriptor) async throws -> (
        records: [[String: Any]], statements: Int
    ) {
        let schema = t.store.reader.schema
        let (set, statements) = try await t.store.reader.read { db -> (RecordSet, Int) in
            final class Counter: @unchecked Sendable { var n = 0 }
            let counter = Counter()
            db.trace(options: .statement) { _ in counter.n += 1 }
            defer { db.trace(options: []) { _ in } }
            let set = try FetchQuery(descriptor, schema: schema).records(db)
            return (set, counter.n)
        }
        let records = try (0..<set.count).map { i in
            try JSONSerialization.jsonObject(with: Data(set.jsonObject(row: i).utf8)) as! [String: Any]
        }
        return (records, statements)
    }

    @Test(
        "a to-one embeds an object (null if none), a to-many an array in identifier order; one query per relationship, never per record"
    )
    func shapes() async throws {
        let shop = GeneratedShop(seed: 5, customers: 200, orders: 1_000, dangling: 20)
        let t = try await KeyPathTests.store(shop)
        var descriptor = FetchDescriptor(entity: "Order", sort: [SortDescriptor("id")])
        descriptor.prefetch = ["customer", "lines"]
        let (records, statements) = try await Self.fetch(t, descriptor)
        #expect(statements == 3, "one for the orders, one per relationship")
        #expect(records.count == shop.orders.count)
        let customers = shop.customerByID, lines = shop.linesByOrder
        let orders = Dictionary(uniqueKeysWithValues: shop.orders.map { ($0.id, $0) })
        for r in records {
            let order = orders[r["id"] as! String]!
            #expect(Set(r.keys) == ["id", "total", "placed", "customer", "lines"])
            if let c = order.customer.flatMap({ customers[$0] }) {
                let embedded = r["customer"] as? [String: Any]
                #expect(embedded?["id"] as? String == c.id && embedded?["name"] as? String == c.name)
                #expect((embedded?["country"] as? String) == c.country)
                #expect(embedded?["country"] is NSNull == (c.country == nil))
            } else {
                #expect(r["customer"] is NSNull)
            }
            let embedded = (r["lines"] as? [[String: Any]]) ?? []
            let expected = (lines[order.id] ?? []).sorted { $0.line < $1.line }
            #expect(embedded.map { $0["line"] as? Int } == expected.map { Int($0.line) })
            #expect(embedded.map { $0["sku"] as? String } == expected.map(\.sku))
            #expect(embedded.allSatisfy { $0["order"] as? String == order.id })
        }
    }

    @Test("fields names embedded fields; nested prefetch; pages and sections keep their embedded records")
    func nestedAndFields() async throws {
        let shop = GeneratedShop(seed: 9, customers: 60, orders: 300)
        let t = try await KeyPathTests.store(shop)
        let customers = shop.customerByID, lines = shop.linesByOrder
        // Only the named fields of the embedded records.
        var descriptor = FetchDescriptor(
            entity: "Order", where: "customer != nil", sort: [SortDescriptor("id")], limit: 50,
            fields: ["id", "customer.name", "lines.sku"])
        var (records, statements) = try await Self.fetch(t, descriptor)
        #expect(statements == 3)
        for r in records {
            #expect(Set(r.keys) == ["id", "customer", "lines"])
            let order = shop.orders.first { $0.id == r["id"] as? String }!
            #expect((r["customer"] as? [String: Any])?.keys.sorted() == ["name"])
            #expect((r["customer"] as? [String: Any])?["name"] as? String == customers[order.customer!]!.name)
            #expect(
                (r["lines"] as? [[String: Any]])?.map { $0["sku"] as! String }
                    == (lines[order.id] ?? []).sorted { $0.line < $1.line }.map(\.sku))
        }
        // From a line: its order, and the order's customer, nested.
        descriptor = FetchDescriptor(
            entity: "OrderLine", where: "qty == 9", fields: ["line", "qty", "order.total", "order.customer.country"])
        (records, statements) = try await Self.fetch(t, descriptor)
        #expect(statements == 3, "lines, their orders, the orders' customers")
        let nines = shop.lines.filter { $0.qty == 9 }
        #expect(records.count == nines.count)
        let orders = Dictionary(uniqueKeysWithValues: shop.orders.map { ($0.id, $0) })
        for r in records {
            #expect(Set(r.keys) == ["line", "qty", "order"])
            let order = r["order"] as! [String: Any]
            #expect(Set(order.keys) == ["total", "customer"])
        }
        let byOrderTotal = Set(nines.map { orders[$0.order]!.total })
        #expect(Set(records.map { ($0["order"] as! [String: Any])["total"] as! Double }) == byOrderTotal)
        let countries = records.map {
            (($0["order"] as! [String: Any])["customer"] as? [String: Any])?["country"] as? String
        }
        #expect(
            countries.sorted { ($0 ?? "") < ($1 ?? "") }
                == nines.map { orders[$0.order]!.customer.flatMap { customers[$0]?.country } }
                .sorted { ($0 ?? "") < ($1 ?? "") })
        // Customers with their orders' lines, two levels of to-many.
        descriptor = FetchDescriptor(entity: "Customer", sort: [SortDescriptor("id")], limit: 10)
        descriptor.prefetch = ["orders.lines"]
        (records, statements) = try await Self.fetch(t, descriptor)
        #expect(statements == 3)
        let byCustomer = shop.ordersByCustomer
        for r in records {
            let embedded = r["orders"] as! [[String: Any]]
            let expected = (byCustomer[r["id"] as! String] ?? []).sorted {
                $0.id.utf8.lexicographicallyPrecedes($1.id.utf8)
            }
            #expect(embedded.map { $0["id"] as! String } == expected.map(\.id))
            #expect(embedded.map { ($0["lines"] as! [Any]).count } == expected.map { lines[$0.id]?.count ?? 0 })
        }
        // Enumeration (export's path) and sections embed per page.
        var enumerated = 0
        var withLines = FetchDescriptor(entity: "Order", fields: ["id", "lines.qty"])
        for try await page in t.store.reader.enumerate(withLines, batchSize: 64) {
            for i in 0..<page.count {
                let id = page.value("id", row: i)!
                guard case .string(let s) = id else { continue }
                #expect(page.embedded[0].members[i].count == lines[s]?.count ?? 0)
                enumerated += 1
            }
        }
        #expect(enumerated == shop.orders.count)
        withLines.sectionBy = "placed"
        let sections = try await t.store.reader.fetchSections(withLines)
        #expect(sections.reduce(0) { $0 + $1.records.count } == shop.orders.count)
        for s in sections {
            for i in 0..<s.records.count {
                guard case .string(let id) = s.records.value("id", row: i)! else { continue }
                #expect(s.records.embedded[0].members[i].count == lines[id]?.count ?? 0)
            }
        }
    }

    @Test("mistakes: unknown relationships with suggestions, fields in prefetch, relationships in fields")
    func mistakes() async throws {
        let t = try await KeyPathTests.store(GeneratedShop(seed: 1, customers: 2, orders: 2))
        func error(_ prefetch: [String], fields: [String]? = nil) async -> DepotError? {
            var d = FetchDescriptor(entity: "Order", fields: fields)
            d.prefetch = prefetch
            do { _ = try await t.store.reader.fetch(d); return nil } catch let e as DepotError { return e } catch {
                return nil
            }
        }
        let cases: [([String], [String]?, DepotError.Code, String)] = [
            (
                ["custmer"], nil, .unknownField,
                #"entity "Order" has no relationship "custmer" (did you mean "customer"?)"#
            ),
            (
                ["lines.ordr"], nil, .unknownField,
                #"entity "OrderLine" has no relationship "ordr" (in "lines.ordr") (did you mean "order"?)"#
            ),
            (["total"], nil, .invalidArgument, #"prefetch names relationships, and "total" is a field"#),
            ([], ["id", "customer"], .invalidArgument, ""),
            ([], ["id", "lines"], .invalidArgument, #"fields names "lines", a relationship"#),
            ([], ["id", "customer.nme"], .unknownField, #"entity "Customer" has no field or relationship "nme""#)
        ]
        for (prefetch, fields, code, message) in cases {
            let e = await error(prefetch, fields: fields)
            if fields == ["id", "customer"] {
                // customer is also the reference's column: a plain field.
                #expect(e == nil)
                continue
            }
            #expect(e?.code == code, "\(prefetch) \(fields ?? [])")
            #expect(e?.message.contains(message) == true, "\(e?.message ?? "no error")")
        }
    }

    @Test("a live fetch with prefetch: a change to an embedded record changes the record that embeds it")
    func liveFetch() async throws {
        let t = try await RelationshipTests.filledShop(orders: .cascade)
        let descriptor = FetchDescriptor(
            entity: "Order", where: "total < 25", fields: ["id", "customer.name", "lines.qty"])
        let feed = try ResultFeed(reader: t.store.reader, descriptor)
        let (_, first) = try await feed.start()
        #expect(
            (0..<first.count).map(first.jsonObject(row:))
                == [
                    #"{"id":"O1","customer":{"name":"Ada"},"lines":[{"qty":2},{"qty":1}]}"#,
                    #"{"id":"O2","customer":{"name":"Ada"},"lines":[]}"#
                ])
        // A line of O1 changes: O1 is updated, with its lines as they are now.
        _ = try await t.store.update(entity: "OrderLine", where: "line == 2", set: ["qty": 5], author: "test")
        var changes = try await feed.changes()
        #expect(changes.updated.count == 1 && changes.inserted.count == 0 && changes.deleted.isEmpty)
        #expect(
            changes.updated.jsonObject(row: 0)
                == #"{"id":"O1","customer":{"name":"Ada"},"lines":[{"qty":2},{"qty":5}]}"#)
        // Ada's name changes: both her orders are updated.
        _ = try await t.store.update(entity: "Customer", where: "id == 'C1'", set: ["name": "Ada L."], author: "test")
        changes = try await feed.changes()
        #expect(Set((0..<changes.updated.count).map { changes.updated.value("id", row: $0)! }) == ["O1", "O2"])
        // An order enters with its embedded records.
        _ = try await t.store.update(entity: "Order", where: "id == 'O3'", set: ["total": 5.0], author: "test")
        changes = try await feed.changes()
        #expect(
            changes.inserted.count == 1
                && changes.inserted.jsonObject(row: 0) == #"{"id":"O3","customer":{"name":"Bob"},"lines":[]}"#)
        // An order's reference moves: the order's own change carries its new customer.
        _ = try await t.store.update(entity: "Order", where: "id == 'O2'", set: ["customer": "C2"], author: "test")
        changes = try await feed.changes()
        #expect(
            changes.updated.count == 1
                && changes.updated.jsonObject(row: 0) == #"{"id":"O2","customer":{"name":"Bob"},"lines":[]}"#)
    }
}
