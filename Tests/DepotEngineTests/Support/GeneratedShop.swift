import DepotEngine

/// A shop of DESIGN §12 generated from a seed, kept in memory as well: the
/// oracle that key path, prefetch and delete rule tests check the store
/// against, each answer computed here independently of the engine's SQL.
struct GeneratedShop {
    struct Customer: Hashable { var id: String; var name: String; var country: String? }
    struct Order: Hashable { var id: String; var total: Double; var placed: String; var customer: String? }
    struct Line: Hashable { var order: String; var line: Int64; var sku: String; var qty: Int64; var price: Double }

    var customers: [Customer] = []
    var orders: [Order] = []
    var lines: [Line] = []

    /// SplitMix64: the same shop for the same seed on every machine.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static let countries: [String?] = ["FR", "DE", "IT", "ES", nil]
    static let names = ["Ada", "alan", "Bea", "bob", "Cy", "Dora", "éva", "Émile", "Zoe", "ann"]
    static let skus = ["A", "B", "C", "D", "E", "F"]

    /// `customers` customers (some with no country), `orders` orders (about
    /// one in eight with no customer, and about one in `dangling` naming a
    /// customer that does not exist, written with references deferred),
    /// 0 to 5 lines each.
    init(seed: UInt64, customers customerCount: Int, orders orderCount: Int, dangling: Int = 0) {
        var r = Random(state: seed)
        for i in 0..<customerCount {
            customers.append(
                Customer(
                    id: "C\(i)", name: Self.names[r.below(Self.names.count)] + " \(i)",
                    country: Self.countries[r.below(Self.countries.count)]))
        }
        for i in 0..<orderCount {
            var customer = r.below(8) == 0 ? nil : customers[r.below(customerCount)].id
            if dangling > 0, r.below(dangling) == 0 { customer = "X\(i)" }
            orders.append(
                Order(
                    id: "O\(i)", total: Double(r.below(4000)) / 4, placed: "2025-0\(1 + r.below(9))-1\(r.below(10))",
                    customer: customer))
            for l in 0..<r.below(6) {
                lines.append(
                    Line(
                        order: "O\(i)", line: Int64(l + 1), sku: Self.skus[r.below(Self.skus.count)],
                        qty: Int64(1 + r.below(9)), price: Double(r.below(120)) / 4))
            }
        }
    }

    /// Writes the shop into `store` in one save.
    func load(into store: Store) async throws {
        var c = RecordBatch(entity: "Customer", columns: ["id", "name", "country"])
        for x in customers { c.append([.string(x.id), .string(x.name), x.country.map(Value.string) ?? .null]) }
        var o = RecordBatch(entity: "Order", columns: ["id", "total", "placed", "customer"])
        for x in orders {
            o.append([.string(x.id), .double(x.total), .string(x.placed), x.customer.map(Value.string) ?? .null])
        }
        var l = RecordBatch(entity: "OrderLine", columns: ["order", "line", "sku", "qty", "price"])
        for x in lines { l.append([.string(x.order), .int(x.line), .string(x.sku), .int(x.qty), .double(x.price)]) }
        let batches = [c, o, l]
        _ = try await store.save(author: "test") { save in
            for batch in batches {
                _ = try save.write(batch, policy: .upsert, deferReferences: batch.entity == "Order")
            }
        }
    }

    func customer(of order: Order) -> Customer? { order.customer.flatMap { id in customerByID[id] } }
    var customerByID: [String: Customer] { Dictionary(uniqueKeysWithValues: customers.map { ($0.id, $0) }) }
    var linesByOrder: [String: [Line]] { Dictionary(grouping: lines, by: \.order) }
    var ordersByCustomer: [String: [Order]] {
        Dictionary(grouping: orders.filter { $0.customer != nil }, by: { $0.customer! })
    }
}
