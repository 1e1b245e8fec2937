import DepotEngine
import Testing

@testable import DepotDaemon

/// `[store.entity.relationships]` in depot.toml (DESIGN §12).
@Suite("depotd configuration: relationships")
struct RelationshipConfigTests {
    static func store(_ entities: String) -> String {
        """
        [daemon]
        state_dir = "/tmp/depot-config-test"
        [[store]]
        name = "shop"
        \(entities)
        """
    }

    /// DESIGN §12's shop, as a user writes it.
    static let shop = store(shopEntities)

    /// The shop's three entities, under a `[[store]]` (shared with ShopDaemonTests).
    static let shopEntities = """

          [[store.entity]]
          name = "Customer"
          identifier = "id"
            [store.entity.fields]
            id = "string"
            name = "string"
            country = "string?"
            [store.entity.relationships]
            orders = { to = "Order", inverse = "customer", delete = "cascade" }
          [[store.entity]]
          name = "Order"
          identifier = "id"
            [store.entity.fields]
            id = "string"
            total = "double"
            placed = "date"
            [store.entity.relationships]
            customer = { to = "Customer" }
            lines = { to = "OrderLine", inverse = "order", delete = "cascade" }
          [[store.entity]]
          name = "OrderLine"
          identifier = ["order", "line"]
            [store.entity.fields]
            line = "int"
            sku = "string"
            qty = "int"
            price = "double"
            [store.entity.relationships]
            order = { to = "Order", required = true }
        """

    @Test("DESIGN §12's shop reads: to-ones become columns of the target's identifier type, in identifiers too")
    func shopReads() throws {
        let config = try DaemonConfig.parse(Self.shop, file: "/etc/depot.toml")
        let entities = config.stores[0].entities
        #expect(entities.map(\.name) == ["Customer", "Order", "OrderLine"])
        let order = entities[1], line = entities[2]
        #expect(try order.field(named: "customer") == Field(name: "customer", type: .string, isOptional: true))
        #expect(order.indexes == [["customer"]])
        #expect(line.identifier == ["order", "line"])
        #expect(try line.field(named: "order") == Field(name: "order", type: .string))
        #expect(Set(order.relationships.map(\.name)) == ["customer", "lines"])
        #expect(order.relationships.first { $0.name == "lines" }?.kind == .toMany(inverse: "order", delete: .cascade))
        #expect(line.relationships == [Relationship(name: "order", target: "Order", kind: .toOne(required: true))])
    }

    @Test("every mistake is reported at once, at its key, naming the entity and the relationship")
    func mistakes() {
        let text = Self.store(
            """
              [[store.entity]]
              name = "Customer"
              identifier = "id"
                [store.entity.fields]
                id = "string"
                [store.entity.relationships]
                orders = { to = "Order", inverse = "buyer" }
                mail = { to = "Custmer" }
                notes = { to = "Note", inverse = "customer", delete = "destroy" }
                best = { to = "Order", delete = "cascade" }
                other = { target = "Order" }
                flat = "Order"
              [[store.entity]]
              name = "Order"
              identifier = "id"
                [store.entity.fields]
                id = "string"
                [store.entity.relationships]
                customer = { to = "Customer", required = "yes" }
                lines = { to = "Line", inverse = "order", delete = "nullify" }
              [[store.entity]]
              name = "Line"
              identifier = "id"
                [store.entity.fields]
                id = "string"
                [store.entity.relationships]
                order = { to = "Order", required = true }
            """)
        let error = #expect(throws: DaemonConfig.Problems.self) {
            try DaemonConfig.parse(text, file: "/etc/depot.toml")
        }
        let all = error?.problems ?? []
        func has(_ text: String) { #expect(all.contains { $0.contains(text) }, "\(text) not in \(all)") }
        has(#"store[0].entity[0].relationships.notes.delete: must be cascade, nullify or deny, not "destroy""#)
        has("store[0].entity[0].relationships.best.delete: sits on the to-many side")
        has("store[0].entity[0].relationships.other.target: unknown key")
        has("store[0].entity[0].relationships.other.to: is required")
        has("store[0].entity[0].relationships.flat: must be a table such as")
        has("store[0].entity[1].relationships.customer.required: must be true or false")
        // Between entities.
        has(
            #"store[0].entity: relationship "Customer.orders": its inverse "buyer" must be a to-one of "Order" to "Customer""#
        )
        has(
            #"relationship "Customer.mail" points to "Custmer", which is not an entity of the store (did you mean "Customer"?)"#
        )
        has(#"relationship "Customer.notes" points to "Note""#)
        has(#"relationship "Order.lines" nullifies "Line.order" on delete, but that reference is required"#)
        #expect(all.count == 10, "\(all)")
    }
}
