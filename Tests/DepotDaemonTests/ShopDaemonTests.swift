import DepotWire
import Foundation
import Testing

/// Relationships through depotd and depotctl (DESIGN §12): the shop
/// configured in depot.toml, imports that check or defer references,
/// key paths, prefetch, export, delete rules and `depotctl check`.
@Suite("Relationships through depotd", .serialized, .timeLimit(.minutes(3)))
struct ShopDaemonTests {
    static let shop = """

        [[store]]
        name = "shop"
        \(RelationshipConfigTests.shopEntities)
        """

    @Test(
        "imports check references (or defer them), key paths and prefetch through fetch, stats and export, cascades, check"
    )
    func shop() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: Self.shop))
        defer { d.stop() }
        func write(_ name: String, _ text: String) throws -> String {
            let file = d.folder.appendingPathComponent("inbox/\(name)")
            try Data(text.utf8).write(to: file)
            return file.path
        }
        func ctl(_ args: [String]) throws -> Ctl.Result { try Ctl.run(args, socket: d.socket) }
        let customers = try write("customers.csv", "id,name,country\nC1,Ada,FR\nC2,Bob,DE\nC3,Cy,\n")
        #expect(try ctl(["import", customers, "--store", "shop", "--entity", "Customer"]).status == 0)
        // O4 names a customer that does not exist: its row is rejected, with its line and the identifier.
        let orders = try write(
            "orders.csv",
            "id,total,placed,customer\nO1,10.5,2025-01-01,C1\nO2,20,2025-01-02,C1\nO3,30,2025-01-03,C2\n"
                + "O4,40,2025-01-04,C9\nO5,50,2025-01-05,\n")
        let imported = try ctl(["--json", "import", orders, "--store", "shop", "--entity", "Order"])
        #expect(imported.status == 0, "\(imported.err)")
        let job = imported.json
        #expect(job["inserted"] as? Int == 4 && job["rejected"] as? Int == 1, "\(imported.out)")
        let rejects = try d.request("GET", "/v1/jobs/\(job["id"] as? String ?? "")/rejects")
        #expect(
            rejects.body.contains(#""line":5"#) && rejects.body.contains(#"no Customer with identifier \"C9\""#),
            "\(rejects.body)")
        // The same with references deferred: kept, and listed by check.
        let deferred = try ctl([
            "--json", "import", orders, "--store", "shop", "--entity", "Order", "--references", "defer"
        ])
        #expect(deferred.json["inserted"] as? Int == 1, "\(deferred.out)")
        let lines = try write(
            "lines.ndjson",
            """
            {"order":"O1","line":1,"sku":"A","qty":2,"price":1.5}
            {"order":"O1","line":2,"sku":"B","qty":7,"price":3}
            {"order":"O3","line":1,"sku":"A","qty":1,"price":1.5}
            {"order":"O8","line":1,"sku":"Z","qty":1,"price":9}

            """)
        let linesJob = try ctl(["--json", "import", lines, "--store", "shop", "--entity", "OrderLine", "--by-path"])
        #expect(linesJob.json["inserted"] as? Int == 3 && linesJob.json["rejected"] as? Int == 1, "\(linesJob.out)")

        let check = try ctl(["check", "shop"])
        #expect(check.status == 1)
        #expect(check.out.contains("O4") && check.out.contains("no Customer \"C9\""), "\(check.out)")
        let checkJSON = try d.request("GET", "/v1/stores/shop/check")
        #expect(checkJSON.object["total"] as? Int == 1)
        #expect((checkJSON.object["dangling"] as? [[String: Any]])?.first?["reference"] as? String == "C9")

        // Key paths and prefetch, as a table and as CSV.
        let fetched = try ctl([
            "fetch", "shop", "Order", "--where", "customer.country == 'FR' AND ANY lines.qty > 5",
            "--prefetch", "lines", "--fields", "id,customer.name,lines.sku", "--format", "csv"
        ])
        #expect(
            fetched.out == "id,customer.name,lines.sku\nO1,Ada,\"[\"\"A\"\",\"\"B\"\"]\"\n",
            "\(fetched.out)\(fetched.err)")
        let fetchedTable = try ctl([
            "fetch", "shop", "Order", "--where", "customer.country == 'FR' AND ANY lines.qty > 5",
            "--fields", "id,customer.name,lines.sku"
        ])
        #expect(
            fetchedTable.lines.last?.split(separator: " ", omittingEmptySubsequences: true) == ["O1", "Ada", "A,", "B"],
            "\(fetchedTable.out)")
        let table = try ctl([
            "fetch", "shop", "Order", "--sort", "-lines.@count,id", "--limit", "2", "--prefetch", "customer"
        ])
        #expect(table.status == 0)
        #expect(
            table.lines.count == 3 && table.lines[1].hasPrefix("O1")
                && table.lines[1].contains(#"{"country":"FR","id":"C1","name":"Ada"}"#),
            "\(table.out)")
        let api = try d.request(
            "POST", "/v1/stores/shop/entities/Order/fetch",
            body:
                #"{"where": "lines.@sum.qty >= 1", "sort": ["id"], "fields": ["id", "customer.name"], "prefetch": ["lines"]}"#
        )
        // TOML's tables come in the order of their keys: a line's fields are line, price, qty, sku, then the to-one.
        #expect(
            api.body.trimmingCharacters(in: .whitespacesAndNewlines)
                == #"{"records":[{"id":"O1","customer":{"name":"Ada"},"lines":[{"line":1,"price":1.5,"qty":2,"sku":"A","order":"O1"},"#
                + #"{"line":2,"price":3.0,"qty":7,"sku":"B","order":"O1"}]},{"id":"O3","customer":{"name":"Bob"},"lines":[{"line":1,"price":1.5,"qty":1,"sku":"A","order":"O3"}]}]}"#,
            "\(api.body)")
        let stats = try ctl(["--json", "stats", "shop", "Order", "--field", "total", "--group-by", "customer.country"])
        #expect(stats.status == 0 && stats.out.contains("\"FR\""), "\(stats.out)\(stats.err)")

        // Export with prefetch: CSV flattens a to-one, holds a to-many as JSON.
        let exported = d.folder.appendingPathComponent("orders.csv").path
        let export = try ctl([
            "export", "shop", "Order", "--where", "id == 'O1'", "--prefetch", "customer,lines",
            "--format", "csv", "-o", exported
        ])
        #expect(export.status == 0, "\(export.err)")
        let csv = try String(contentsOfFile: exported, encoding: .utf8)
        #expect(
            csv == "id,placed,total,customer.country,customer.id,customer.name,lines\r\n"
                + #"O1,2025-01-01,10.5,FR,C1,Ada,"[{""line"":1,""price"":1.5,""qty"":2,""sku"":""A"",""order"":""O1""},{""line"":2,""price"":3.0,""qty"":7,""sku"":""B"",""order"":""O1""}]""#
                + "\r\n", "\(csv)")

        // Deleting Ada cascades to her orders and their lines, all in one history transaction.
        let deleted = try ctl(["--json", "delete", "shop", "Customer", "--where", "name == 'Ada'"])
        #expect(deleted.status == 0, "\(deleted.err)")
        #expect(deleted.json["deleted"] as? Int == 5, "the job counts what cascaded: \(deleted.out)")
        #expect(try ctl(["count", "shop", "Order"]).out == "3\n")
        #expect(try ctl(["count", "shop", "OrderLine"]).out == "1\n")
        let history = try d.request("GET", "/v1/stores/shop/history?limit=1000")
        let transactions = history.object["transactions"] as? [[String: Any]] ?? []
        let last = transactions.last?["changes"] as? [[String: Any]] ?? []
        #expect(
            Set(last.map { "\($0["entity"]!)/\($0["kind"]!)" }) == [
                "Customer/delete", "Order/delete", "OrderLine/delete"
            ])
        #expect(last.count == 5, "C1, O1, O2 and O1's two lines")

        // The store describes its relationships.
        let store = try JSONDecoder().decode(
            StoreInfo.self, from: Data(try d.request("GET", "/v1/stores/shop").body.utf8))
        #expect(
            store.entity("Order")?.relationships == [
                .init(name: "customer", to: "Customer", kind: "to-one", required: false, columns: ["customer"]),
                .init(name: "lines", to: "OrderLine", kind: "to-many", inverse: "order", delete: "cascade")
            ])
    }
}
