import DepotEngine
import Testing

/// Delete rules (DESIGN §12) on the generated shop, each checked against
/// what the in-memory shop says should remain, and against the history.
@Suite("Relationships: delete rules against the oracle")
struct DeleteRuleOracleTests {
    static func store(_ shop: GeneratedShop, orders: DeleteRule?, lines: DeleteRule = .cascade) async throws
        -> TemporaryStore
    {
        let declarations = RelationshipTests.shop(lines: .toMany(inverse: "order", delete: lines), orders: orders)
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve(declarations))
        try await shop.load(into: t.store)
        return t
    }

    func ids(_ t: TemporaryStore, _ entity: String, _ predicate: String? = nil) async throws -> Set<String> {
        Set(try await t.store.reader.identifiers(FetchDescriptor(entity: entity, where: predicate)).map(\.json))
    }

    @Test("cascade, nullify and deny of a batch delete leave what the oracle says; the counters agree with the history")
    func rules() async throws {
        let shop = GeneratedShop(seed: 21, customers: 200, orders: 1_500, dangling: 25)
        let doomed = Set(shop.customers.filter { $0.country == "FR" }.map(\.id))
        let doomedOrders = Set(shop.orders.filter { $0.customer.map(doomed.contains) == true }.map(\.id))
        let doomedLines = shop.lines.filter { doomedOrders.contains($0.order) }
        func json(_ s: String) -> String { "\"\(s)\"" }

        // cascade: the French customers, their orders, and those orders' lines.
        var t = try await Self.store(shop, orders: .cascade)
        var before = try await t.store.reader.latestToken()
        var counts = try await t.store.delete(
            entity: "Customer", where: "country == 'FR'", author: "test", batchSize: 7)
        #expect(counts.deleted == doomed.count + doomedOrders.count + doomedLines.count)
        #expect(
            try await ids(t, "Customer") == Set(shop.customers.filter { !doomed.contains($0.id) }.map { json($0.id) }))
        #expect(
            try await ids(t, "Order") == Set(shop.orders.filter { !doomedOrders.contains($0.id) }.map { json($0.id) }))
        #expect(
            try await ids(t, "OrderLine")
                == Set(
                    shop.lines.filter { !doomedOrders.contains($0.order) }
                        .map { "[\(json($0.order)),\($0.line)]" }))
        var changes = try await t.store.reader.history(after: before).flatMap(\.changes)
        #expect(changes.count == counts.deleted && changes.allSatisfy { $0.kind == .delete })
        // Nothing left points at a missing record but the dangling references loaded as such.
        #expect(
            try await t.store.reader.danglingReferences().total
                == shop.orders.filter { $0.customer?.hasPrefix("X") == true }.count)

        // nullify: every order stays; the French customers' lose their customer.
        t = try await Self.store(shop, orders: .nullify)
        before = try await t.store.reader.latestToken()
        counts = try await t.store.delete(entity: "Customer", where: "country == 'FR'", author: "test", batchSize: 7)
        #expect(counts.deleted == doomed.count && counts.updated == doomedOrders.count)
        #expect(
            try await ids(t, "Order", "customer == nil")
                == Set(shop.orders.filter { $0.customer == nil || doomedOrders.contains($0.id) }.map { json($0.id) }))
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "OrderLine")) == shop.lines.count)
        changes = try await t.store.reader.history(after: before).flatMap(\.changes)
        #expect(changes.filter { $0.kind == .update }.count == counts.updated)
        #expect(changes.filter { $0.kind == .delete }.count == counts.deleted)

        // deny: refused while any French customer has an order; nothing changes.
        t = try await Self.store(shop, orders: .deny)
        before = try await t.store.reader.latestToken()
        await #expect(throws: DepotError.self) {
            try await t.store.delete(entity: "Customer", where: "country == 'FR'", author: "test", batchSize: 10_000)
        }
        #expect(try await t.store.reader.latestToken() == before)
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Customer")) == shop.customers.count)
        // Customers with no order go, under deny too.
        let lonely = shop.customers.filter { c in !shop.orders.contains { $0.customer == c.id } }
        counts = try await t.store.delete(entity: "Customer", where: "orders.@count == 0", author: "test")
        #expect(counts.deleted == lonely.count)

        // Lines that deny: an order with lines cannot go, one without can.
        t = try await Self.store(shop, orders: .cascade, lines: .deny)
        let bare = shop.orders.filter { o in !shop.lines.contains { $0.order == o.id } }
        counts = try await t.store.delete(entity: "Order", where: "lines.@count == 0", author: "test")
        #expect(counts.deleted == bare.count)
        do {
            _ = try await t.store.delete(entity: "Customer", where: "ANY orders.lines.qty > 0", author: "test")
            Issue.record("a cascade into orders whose lines deny went through")
        } catch let error as DepotError {
            #expect(error.code == .conflict)
            #expect(
                error.message.contains("OrderLine record")
                    && error.message.contains("\"OrderLine.order\", whose delete rule is deny"))
        }
    }
}
