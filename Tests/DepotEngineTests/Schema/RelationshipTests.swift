import DepotEngine
import Foundation
import Testing

/// Relationships in the schema (DESIGN §12): to-ones' columns, and every
/// mistake reported at configuration time.
@Suite("Relationships: schema")
struct RelationshipTests {
    /// DESIGN §12's shop.
    static func shop(
        customerIdentifier: [String] = ["id"], customerFields: [Field]? = nil,
        lines: Relationship.Kind = .toMany(inverse: "order", delete: .cascade),
        orderRequired: Bool = true, orders: DeleteRule? = .cascade
    ) -> [EntityDeclaration] {
        [
            EntityDeclaration(
                name: "Customer",
                fields: customerFields ?? [
                    Field(name: "id", type: .string), Field(name: "name", type: .string),
                    Field(name: "country", type: .string, isOptional: true)
                ],
                identifier: customerIdentifier,
                relationships: orders.map {
                    [
                        Relationship(
                            name: "orders", target: "Order",
                            kind: .toMany(inverse: "customer", delete: $0))
                    ]
                } ?? []),
            EntityDeclaration(
                name: "Order",
                fields: [
                    Field(name: "id", type: .string), Field(name: "total", type: .double),
                    Field(name: "placed", type: .date)
                ],
                identifier: ["id"],
                relationships: [
                    Relationship(name: "customer", target: "Customer", kind: .toOne(required: false)),
                    Relationship(name: "lines", target: "OrderLine", kind: lines)
                ]),
            EntityDeclaration(
                name: "OrderLine",
                fields: [
                    Field(name: "line", type: .int), Field(name: "sku", type: .string),
                    Field(name: "qty", type: .int), Field(name: "price", type: .double)
                ],
                identifier: ["order", "line"],
                relationships: [Relationship(name: "order", target: "Order", kind: .toOne(required: orderRequired))])
        ]
    }

    @Test(
        "a to-one is a column of its target's identifier type, optional unless required, indexed; it may be part of an identifier"
    )
    func columns() throws {
        let entities = try EntityDeclaration.resolve(Self.shop())
        let order = entities[1], line = entities[2]
        #expect(order.relationshipColumns == ["customer": ["customer"]])
        #expect(try order.field(named: "customer") == Field(name: "customer", type: .string, isOptional: true))
        #expect(order.indexes == [["customer"]])
        #expect(line.identifier == ["order", "line"])
        #expect(try line.field(named: "order") == Field(name: "order", type: .string, isOptional: false))
        // The identifier leads with the to-one: no second index for it.
        #expect(line.indexes.isEmpty)
        #expect(entities[0].fields.map(\.name) == ["id", "name", "country"])
        #expect(entities[0].relationships.map(\.name) == ["orders"])
    }

    @Test(
        "a target with a compound identifier gives one column per identifier field, through to-ones in identifiers too")
    func compoundTarget() throws {
        let entities = try EntityDeclaration.resolve(
            Self.shop(
                customerIdentifier: ["region", "number"],
                customerFields: [Field(name: "region", type: .string), Field(name: "number", type: .int)]))
        let order = entities[1]
        #expect(order.relationshipColumns["customer"] == ["customer.region", "customer.number"])
        #expect(
            try order.field(named: "customer.number") == Field(name: "customer.number", type: .int, isOptional: true))
        #expect(order.indexes == [["customer.region", "customer.number"]])
        // A shipment of an order line refers to a compound identifier that holds a to-one.
        let shipment = EntityDeclaration(
            name: "Shipment", fields: [Field(name: "id", type: .int)], identifier: ["id"],
            relationships: [Relationship(name: "item", target: "OrderLine", kind: .toOne(required: true))])
        let withShipment = try EntityDeclaration.resolve(Self.shop() + [shipment])
        #expect(withShipment[3].relationshipColumns["item"] == ["item.order", "item.line"])
        #expect(try withShipment[3].field(named: "item.order") == Field(name: "item.order", type: .string))
        #expect(try withShipment[3].field(named: "item.line") == Field(name: "item.line", type: .int))
    }

    @Test("a to-one may point at its own entity; optional to-ones may go round in a cycle")
    func selfAndCycles() throws {
        let employee = EntityDeclaration(
            name: "Employee", fields: [Field(name: "id", type: .int)], identifier: ["id"],
            relationships: [Relationship(name: "manager", target: "Employee", kind: .toOne(required: false))])
        let resolved = try EntityDeclaration.resolve([employee])
        #expect(try resolved[0].field(named: "manager") == Field(name: "manager", type: .int, isOptional: true))
        let a = EntityDeclaration(
            name: "A", fields: [Field(name: "id", type: .int)], identifier: ["id"],
            relationships: [Relationship(name: "b", target: "B", kind: .toOne(required: true))])
        let b = EntityDeclaration(
            name: "B", fields: [Field(name: "id", type: .string)], identifier: ["id"],
            relationships: [Relationship(name: "a", target: "A", kind: .toOne(required: false))])
        let both = try EntityDeclaration.resolve([a, b])
        #expect(try both[0].field(named: "b").type == .string && both[1].field(named: "a").type == .int)
    }

    @Test("every mistake at once, each naming the entity and the relationship")
    func mistakes() {
        func problems(_ declarations: [EntityDeclaration]) -> String {
            do {
                _ = try EntityDeclaration.resolve(declarations)
                return ""
            } catch let error as DepotError {
                #expect(error.code == .invalidSchema)
                return error.message
            } catch {
                return "\(error)"
            }
        }
        var shop = Self.shop(lines: .toMany(inverse: "order", delete: .nullify))
        shop[0].relationships.append(Relationship(name: "name", target: "Order", kind: .toOne(required: false)))
        shop[1].relationships.append(Relationship(name: "shipper", target: "Custmer", kind: .toOne(required: false)))
        shop[1].relationships.append(
            Relationship(name: "notes", target: "OrderLine", kind: .toMany(inverse: "sku", delete: .cascade)))
        let message = problems(shop)
        #expect(message.contains(#"relationship "Customer.name" has the name of a field of "Customer""#))
        #expect(
            message.contains(#"relationship "Order.shipper" points to "Custmer", which is not an entity of the store"#))
        #expect(message.contains(#"did you mean "Customer""#))
        #expect(
            message.contains(
                #"relationship "Order.notes": its inverse "sku" must be a to-one of "OrderLine" to "Order""#))
        #expect(
            message.contains(
                #"relationship "Order.lines" nullifies "OrderLine.order" on delete, but that reference is required"#))

        // Required references in a cycle: nothing could be written first.
        let a = EntityDeclaration(
            name: "A", fields: [Field(name: "id", type: .int)], identifier: ["id"],
            relationships: [Relationship(name: "b", target: "B", kind: .toOne(required: true))])
        let b = EntityDeclaration(
            name: "B", fields: [Field(name: "id", type: .int)], identifier: ["id"],
            relationships: [Relationship(name: "a", target: "A", kind: .toOne(required: true))])
        #expect(problems([a, b]).contains(#"required references go round in a cycle, "A" -> "B" -> "A""#))
        let me = EntityDeclaration(
            name: "Me", fields: [Field(name: "id", type: .int)], identifier: ["id"],
            relationships: [Relationship(name: "me", target: "Me", kind: .toOne(required: true))])
        #expect(problems([me]).contains(#""Me" -> "Me""#))
        // Identifiers made of each other: their types could never be known.
        let x = EntityDeclaration(
            name: "X", fields: [], identifier: ["y"],
            relationships: [Relationship(name: "y", target: "Y", kind: .toOne(required: false))])
        let y = EntityDeclaration(
            name: "Y", fields: [], identifier: ["x"],
            relationships: [Relationship(name: "x", target: "X", kind: .toOne(required: false))])
        #expect(problems([x, y]).contains(#"identifiers refer to each other in a cycle, "X" -> "Y" -> "X""#))
        #expect(
            problems([x, y]).contains(
                #"relationship "X.y" is part of the identifier of "X", which is never null: declare it with required = true"#
            ))
        #expect(
            problems(Self.shop(orderRequired: false)).contains(
                #"relationship "OrderLine.order" is part of the identifier"#))
    }

    @Test(
        "a write's reference must name a stored record of its target: else the row is rejected, naming the relationship and the identifier"
    )
    func referencesChecked() async throws {
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve(Self.shop()))
        func write(_ entity: String, _ columns: [String], _ rows: [[Value]]) async throws -> WriteCounts {
            var batch = RecordBatch(entity: entity, columns: columns)
            for row in rows { batch.append(row) }
            let frozen = batch
            return try await t.store.save(author: "test") { try $0.write(frozen, policy: .upsert) }.value
        }
        #expect(try await write("Customer", ["id", "name"], [["C1", "Ada"]]).inserted == 1)
        let orders = try await write(
            "Order", ["id", "total", "placed", "customer"],
            [
                ["O1", 10.0, "2025-01-02", "C1"],
                ["O2", 20.0, "2025-01-03", "C9"],  // no such customer
                ["O3", 30.0, "2025-01-04", nil]  // an optional reference may be null
            ])
        #expect(orders.inserted == 2)
        #expect(orders.rejections.map(\.row) == [1] && orders.rejections.map(\.field) == ["customer"])
        #expect(orders.rejections.map(\.reason) == [#"no Customer with identifier "C9""#])
        // A to-one in the identifier is checked too; the batch that does
        // not give a reference's column leaves it alone.
        let lines = try await write(
            "OrderLine", ["order", "line", "sku", "qty", "price"],
            [
                ["O1", 1, "A", 2, 1.5], ["O2", 1, "B", 1, 3.0]
            ])
        #expect(lines.inserted == 1)
        #expect(lines.rejections.map(\.reason) == [#"no Order with identifier "O2""#])
        #expect(try await write("Order", ["id", "total"], [["O1", 11.0]]).updated == 1)
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Order", where: "customer == 'C1'")) == 1)
    }

    /// A shop with customers C1 and C2, orders O1, O2 (C1) and O3 (C2), and two lines of O1.
    static func filledShop(orders: DeleteRule?, history: HistoryDetail = .fields) async throws -> TemporaryStore {
        var declarations = Self.shop(orders: orders)
        declarations[1].history = history
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve(declarations))
        _ = try await t.store.save(author: "test") { save in
            var customers = RecordBatch(entity: "Customer", columns: ["id", "name"])
            customers.append(["C1", "Ada"]); customers.append(["C2", "Bob"])
            var orders = RecordBatch(entity: "Order", columns: ["id", "total", "placed", "customer"])
            orders.append(["O1", 10.0, "2025-01-02", "C1"]); orders.append(["O2", 20.0, "2025-01-03", "C1"])
            orders.append(["O3", 30.0, "2025-01-04", "C2"])
            var lines = RecordBatch(entity: "OrderLine", columns: ["order", "line", "sku", "qty", "price"])
            lines.append(["O1", 1, "A", 2, 1.5]); lines.append(["O1", 2, "B", 1, 3.0])
            for batch in [customers, orders, lines] { _ = try save.write(batch, policy: .upsert) }
        }
        return t
    }

    func count(_ t: TemporaryStore, _ entity: String, _ predicate: String? = nil) async throws -> Int {
        try await t.store.reader.count(FetchDescriptor(entity: entity, where: predicate))
    }

    @Test(
        "cascade deletes what refers to a deleted record, transitively, all logged in the deleting save's transaction")
    func cascade() async throws {
        let t = try await Self.filledShop(orders: .cascade)
        let before = try await t.store.reader.latestToken()
        // The counter agrees with the history: C1, her two orders, O1's two lines.
        #expect(try await t.store.delete(entity: "Customer", where: "id == 'C1'", author: "test").deleted == 5)
        #expect(try await count(t, "Customer") == 1)
        #expect(try await count(t, "Order") == 1)
        #expect(try await count(t, "OrderLine") == 0)
        let transactions = try await t.store.reader.history(after: before)
        #expect(transactions.count == 1)
        let changes = transactions.first?.changes ?? []
        #expect(
            changes.map { "\($0.kind) \($0.entity) \($0.identifier)" }.sorted() == [
                #"delete Customer "C1""#, #"delete Order "O1""#, #"delete Order "O2""#,
                #"delete OrderLine ["O1",1]"#, #"delete OrderLine ["O1",2]"#
            ])
    }

    @Test(
        "nullify sets the reference to null and logs an update of it, with values where the entity keeps them; no declared inverse nullifies too"
    )
    func nullify() async throws {
        for rule in [DeleteRule.nullify, nil] {
            let t = try await Self.filledShop(orders: rule, history: .values)
            let before = try await t.store.reader.latestToken()
            let counts = try await t.store.delete(entity: "Customer", where: "id == 'C1'", author: "test")
            #expect(counts.deleted == 1 && counts.updated == 2, "the nullified orders count as updated")
            #expect(try await count(t, "Order") == 3)
            #expect(try await count(t, "Order", "customer == nil") == 2)
            let changes = try await t.store.reader.history(after: before).flatMap(\.changes)
            let updates = changes.filter { $0.kind == .update }
            #expect(updates.map(\.identifier).sorted() == [#""O1""#, #""O2""#])
            #expect(
                updates.allSatisfy {
                    $0.fields == ["customer"] && $0.old == #"{"customer":"C1"}"# && $0.new == #"{"customer":null}"#
                })
        }
    }

    @Test("deny refuses the delete, saying how many records still refer, and changes nothing")
    func deny() async throws {
        let t = try await Self.filledShop(orders: .deny)
        let before = try await t.store.reader.latestToken()
        do {
            _ = try await t.store.delete(entity: "Customer", where: "id == 'C1'", author: "test")
            Issue.record("the delete went through")
        } catch let error as DepotError {
            #expect(error.code == .conflict)
            #expect(
                error.message.contains(
                    #"cannot delete Customer "C1": 2 Order records refer to it through "Order.customer", whose delete rule is deny"#
                ))
        }
        #expect(try await count(t, "Customer") == 2)
        #expect(try await count(t, "Order") == 3)
        #expect(try await t.store.reader.latestToken() == before)
        // A customer nobody refers to goes.
        _ = try await t.store.save(author: "test") { save in
            var c = RecordBatch(entity: "Customer", columns: ["id", "name"])
            c.append(["C3", "Cy"])
            _ = try save.write(c, policy: .upsert)
        }
        #expect(try await t.store.delete(entity: "Customer", where: "id == 'C3'", author: "test").deleted == 1)
    }

    @Test(
        "a batch update that sets a reference checks it: a missing target fails the update with its identifier, and changes nothing"
    )
    func updateChecksReferences() async throws {
        let t = try await Self.filledShop(orders: .cascade)
        do {
            _ = try await t.store.update(entity: "Order", where: "id == 'O3'", set: ["customer": "C9"], author: "test")
            Issue.record("the update went through")
        } catch let error as DepotError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(#"no Customer with identifier "C9""#))
        }
        #expect(try await count(t, "Order", "customer == 'C2'") == 1)
        #expect(
            try await t.store.update(entity: "Order", where: "id == 'O3'", set: ["customer": "C1"], author: "test")
                .updated == 1)
        #expect(
            try await t.store.update(entity: "Order", where: "id == 'O3'", set: ["customer": nil], author: "test")
                .updated == 1)
        #expect(try await count(t, "Order", "customer == 'C1'") == 2)
    }

    @Test(
        "adding an optional to-one migrates the store on open (a column and its index); a new required one is refused, naming it"
    )
    func migration() async throws {
        var declarations = Self.shop()
        declarations[1].relationships.removeAll { $0.name == "customer" }
        declarations[0].relationships = []
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve(declarations))
        _ = try await t.store.save(author: "test") { save in
            var orders = RecordBatch(entity: "Order", columns: ["id", "total", "placed"])
            orders.append(["O1", 10.0, "2025-01-02"])
            _ = try save.write(orders, policy: .upsert)
        }
        try await t.store.close()
        // Required: the stored order has no customer to give it.
        var required = Self.shop(orders: nil)
        required[1].relationships[0] = Relationship(name: "customer", target: "Customer", kind: .toOne(required: true))
        do {
            _ = try await TemporaryStore(entities: try EntityDeclaration.resolve(required), folder: t.folder)
            Issue.record("a new required to-one was accepted")
        } catch let error as DepotError {
            #expect(error.code == .migrationRefused)
            #expect(
                error.message.contains(#"entity "Order", relationship "customer": a new to-one must be optional"#),
                "\(error.message)")
        }
        // Optional: the column arrives, null in the stored order, with its index.
        let reopened = try await TemporaryStore(entities: try EntityDeclaration.resolve(Self.shop()), folder: t.folder)
        #expect(try await reopened.store.reader.count(FetchDescriptor(entity: "Order", where: "customer == nil")) == 1)
        let indexes = try sqlite3(t.path, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Order'")
        #expect(indexes.contains("depot_idx_Order(customer)"))
        _ = try await reopened.store.save(author: "test") { save in
            var c = RecordBatch(entity: "Customer", columns: ["id", "name"])
            c.append(["C1", "Ada"])
            _ = try save.write(c, policy: .upsert)
        }
        #expect(
            try await reopened.store.update(
                entity: "Order", where: "id == 'O1'", set: ["customer": "C1"],
                author: "test"
            ).updated == 1)
        try await reopened.store.close()
    }

    @Test("references = defer keeps a reference to a record not there yet; the check lists it until the target arrives")
    func deferredReferences() async throws {
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve(Self.shop()))
        let file = t.folder.appendingPathComponent("orders.csv").path
        try Data("id,total,placed,customer\nO1,1,2025-01-01,C1\nO2,2,2025-01-02,C2\nO3,3,2025-01-03,\n".utf8)
            .write(to: URL(fileURLWithPath: file))
        func run(defer deferred: Bool, job: String) async throws -> ImportProgress {
            var options = ImportOptions(format: .csv)
            options.deferReferences = deferred
            return try await Importer.run(
                ImportRequest(
                    job: job, entity: "Order", path: file,
                    rejectsPath: t.folder.appendingPathComponent("\(job).rejects").path,
                    options: options), into: t.store)
        }
        // Checked: both orders with a customer are rejected.
        let checked = try await run(defer: false, job: "checked")
        #expect(checked.inserted == 1 && checked.rejected == 2)
        let rejects = try String(
            contentsOfFile: t.folder.appendingPathComponent("checked.rejects").path, encoding: .utf8)
        #expect(
            rejects.contains(#"no Customer with identifier \"C1\""#) && rejects.contains(#""line":3"#), "\(rejects)")
        // Deferred: kept, and dangling.
        let deferred = try await run(defer: true, job: "deferred")
        #expect(deferred.inserted == 2 && deferred.rejected == 0)
        var check = try await t.store.reader.danglingReferences()
        #expect(check.total == 2)
        #expect(check.dangling.map(\.reference) == [Identifier(["C1"]), Identifier(["C2"])])
        #expect(check.dangling.map(\.identifier) == [Identifier(["O1"]), Identifier(["O2"])])
        #expect(
            check.dangling.allSatisfy {
                $0.entity == "Order" && $0.relationship == "customer" && $0.target == "Customer"
            })
        #expect(check.relationships.map(\.dangling) == [2, 0], "Order.customer, then OrderLine.order")
        #expect(try await t.store.reader.danglingReferences(limit: 1).dangling.count == 1)
        // A path through a dangling reference reads as null.
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Order", where: "customer.name == nil")) == 3)
        // C1 arrives: its reference resolves.
        _ = try await t.store.save(author: "test") { save in
            var c = RecordBatch(entity: "Customer", columns: ["id", "name"])
            c.append(["C1", "Ada"])
            _ = try save.write(c, policy: .upsert)
        }
        check = try await t.store.reader.danglingReferences()
        #expect(check.total == 1 && check.dangling.map(\.reference) == [Identifier(["C2"])])
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Order", where: "customer.name == 'Ada'")) == 1)
    }

    @Test(
        "a target with a compound identifier: imports give the reference as one JSON array; key paths and prefetch follow it"
    )
    func compoundImports() async throws {
        let declarations = Self.shop(
            customerIdentifier: ["region", "number"],
            customerFields: [
                Field(name: "region", type: .string), Field(name: "number", type: .int),
                Field(name: "name", type: .string)
            ])
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve(declarations))
        _ = try await t.store.save(author: "test") { save in
            var c = RecordBatch(entity: "Customer", columns: ["region", "number", "name"])
            c.append(["EU", 12, "Ada"]); c.append(["US", 12, "Bob"])
            _ = try save.write(c, policy: .upsert)
        }
        func run(_ name: String, _ text: String, format: ImportOptions.Format) async throws -> (ImportProgress, String)
        {
            let file = t.folder.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            let rejects = file + ".rejects"
            let progress = try await Importer.run(
                ImportRequest(
                    job: name, entity: "Order", path: file, rejectsPath: rejects,
                    options: ImportOptions(format: format)), into: t.store)
            return (progress, (try? String(contentsOfFile: rejects, encoding: .utf8)) ?? "")
        }
        let (csv, csvRejects) = try await run(
            "orders.csv",
            """
            id,total,placed,customer
            O1,1,2025-01-01,"[""EU"",12]"
            O2,2,2025-01-02,"[""US"",12]"
            O3,3,2025-01-03,
            O4,4,2025-01-04,"[""EU""]"
            O5,5,2025-01-05,"[""EU"",99]"
            O6,6,2025-01-06,"[""EU"",""twelve""]"

            """, format: .csv)
        #expect(csv.inserted == 3 && csv.rejected == 3, "\(csvRejects)")
        #expect(
            csvRejects.contains(
                #"\"customer\" has 1 values; the identifier it refers to has 2 (customer.region, customer.number)"#))
        #expect(csvRejects.contains(#"no Customer with identifier [\"EU\",99]"#))
        #expect(csvRejects.contains(#""line":7"#), "\(csvRejects)")
        let (json, jsonRejects) = try await run(
            "orders.ndjson",
            """
            {"id":"O7","total":7,"placed":"2025-01-07","customer":["US",12]}
            {"id":"O8","total":8,"placed":"2025-01-08","customer":null}
            {"id":"O9","total":9,"placed":"2025-01-09","customer":"EU"}

            """, format: .ndjson)
        #expect(json.inserted == 2 && json.rejected == 1, "\(jsonRejects)")
        #expect(jsonRejects.contains(#"\"customer\" is not a JSON array"#), "\(jsonRejects)")
        #expect(try await count(t, "Order", "customer.name == 'Bob'") == 2)
        #expect(try await count(t, "Order", "customer == nil") == 2)
        #expect(try await count(t, "Order", "customer.region == 'EU'") == 1)
        let d = FetchDescriptor(entity: "Order", sort: [SortDescriptor("id")], fields: ["id", "customer.name"])
        let set = try await t.store.reader.fetch(d)
        #expect(
            (0..<set.count).map(set.jsonObject(row:)) == [
                #"{"id":"O1","customer":{"name":"Ada"}}"#, #"{"id":"O2","customer":{"name":"Bob"}}"#,
                #"{"id":"O3","customer":null}"#,
                #"{"id":"O7","customer":{"name":"Bob"}}"#, #"{"id":"O8","customer":null}"#
            ])
        // Customers with their orders: the inverse's two columns match the compound identifier.
        let customers = FetchDescriptor(
            entity: "Customer", sort: [SortDescriptor("region")], fields: ["name", "orders.id"])
        let withOrders = try await t.store.reader.fetch(customers)
        #expect(
            (0..<withOrders.count).map(withOrders.jsonObject(row:)) == [
                #"{"name":"Ada","orders":[{"id":"O1"}]}"#, #"{"name":"Bob","orders":[{"id":"O2"},{"id":"O7"}]}"#
            ])
    }
}
