import DepotEngine
import Foundation
import Testing

/// The expression oracle (issue #32): expressions generated at random,
/// rendered in NSExpression's syntax, computed by each backend's SQL for
/// every record and compared with an evaluation in memory written here,
/// apart from the engine's.
@Suite("Expression oracle: SQLite and PostgreSQL")
struct ExpressionOracleTests {
    /// An expression as generated, with its text and its value for a record.
    indirect enum Node {
        case field(String)
        case int(Int64)
        case double(Double)
        case string(String)
        case null
        case binary(String, Node, Node)
        case negate(Node)
        case function(String, [Node])
        /// TERNARY(field op literal, a, b)
        case ternary(String, String, Int64, Node, Node)

        var text: String {
            switch self {
            case .field(let f): f
            case .int(let i): "\(i)"
            case .double(let d): "\(d)"
            case .string(let s): "'\(s)'"
            case .null: "nil"
            case .binary(let op, let a, let b): "(\(a.text) \(op) \(b.text))"
            case .negate(let a): "-\(a.text)"
            case .function(let name, let args): "\(name)(\(args.map(\.text).joined(separator: ", ")))"
            case .ternary(let f, let op, let v, let a, let b): "TERNARY(\(f) \(op) \(v), \(a.text), \(b.text))"
            }
        }

        /// The value for `record`, as DESIGN §17 defines it.
        func value(_ record: [String: Value]) -> Value {
            switch self {
            case .field(let f): return record[f] ?? .null
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            case .string(let s): return .string(s)
            case .null: return .null
            case .negate(let a):
                switch a.value(record) {
                case .int(let i): return .int(-i)
                case .double(let d): return .double(-d)
                default: return .null
                }
            case .binary(let op, let a, let b):
                let x = a.value(record), y = b.value(record)
                guard let p = Self.number(x), let q = Self.number(y) else { return .null }
                if op == "/" { return q == 0 ? .null : .double(p / q) }
                if case .int(let i) = x, case .int(let j) = y {
                    return .int(op == "+" ? i + j : op == "-" ? i - j : i * j)
                }
                return .double(op == "+" ? p + q : op == "-" ? p - q : p * q)
            case .function(let name, let args):
                let x = args[0].value(record)
                switch name {
                case "modulus:by:":
                    guard case .int(let i) = x, case .int(let j) = args[1].value(record), j != 0 else { return .null }
                    return .int(i % j)
                case "uppercase:", "lowercase:", "length:":
                    guard case .string(let s) = x else { return .null }
                    if name == "length:" { return .int(Int64(s.unicodeScalars.count)) }
                    // The letters a to z only (DESIGN §17), whatever the backend's locale.
                    let upper = name == "uppercase:"
                    return .string(
                        String(
                            String.UnicodeScalarView(
                                s.unicodeScalars.map { c in
                                    let v = c.value
                                    if upper, (97...122).contains(v) { return Unicode.Scalar(v - 32)! }
                                    if !upper, (65...90).contains(v) { return Unicode.Scalar(v + 32)! }
                                    return c
                                })))
                default:
                    guard let d = Self.number(x) else { return .null }
                    if case .int = x, name != "sqrt:" {
                        return name == "abs:" ? .int(Swift.abs(Int64(d))) : x
                    }
                    switch name {
                    case "abs:": return .double(Swift.abs(d))
                    case "sqrt:": return d < 0 ? .null : .double(d.squareRoot())
                    case "floor:": return .double(d.rounded(.down))
                    case "ceiling:": return .double(d.rounded(.up))
                    default: return .double(d.rounded(.towardZero))
                    }
                }
            case .ternary(let f, let op, let v, let a, let b):
                guard let field = Self.number(record[f] ?? .null) else { return b.value(record) }
                let holds = op == ">" ? field > Double(v) : op == "<" ? field < Double(v) : field == Double(v)
                let chosen = holds ? a.value(record) : b.value(record)
                // A TERNARY of an int and a double is a double.
                if case .int(let i) = chosen, a.isDouble || b.isDouble { return .double(Double(i)) }
                return chosen
            }
        }

        var readsField: Bool {
            switch self {
            case .field: true
            case .binary(_, let a, let b): a.readsField || b.readsField
            case .negate(let a): a.readsField
            case .function(_, let args): args.contains { $0.readsField }
            case .ternary: true
            default: false
            }
        }

        var isDouble: Bool {
            switch self {
            case .double, .field("x"), .field("y"): true
            case .binary(let op, let a, let b): op == "/" || a.isDouble || b.isDouble
            case .negate(let a): a.isDouble
            case .function(let name, let args):
                name == "sqrt:" || (["abs:", "floor:", "ceiling:", "trunc:"].contains(name) && args[0].isDouble)
            case .ternary(_, _, _, let a, let b): a.isDouble || b.isDouble
            default: false
            }
        }

        var isString: Bool {
            switch self {
            case .string, .field("s"), .field("t"): true
            case .function(let name, _): ["uppercase:", "lowercase:"].contains(name)
            default: false
            }
        }

        static func number(_ v: Value) -> Double? {
            switch v {
            case .int(let i): Double(i)
            case .double(let d): d
            default: nil
            }
        }
    }

    /// A deterministic generator of numeric and string expressions.
    struct Generator {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }

        mutating func number(depth: Int) -> Node {
            if depth == 0 || next(4) == 0 {
                switch next(7) {
                case 0: return .field("a")
                case 1: return .field("b")
                case 2: return .field("x")
                case 3: return .field("y")
                case 4: return .int(Int64(next(21)) - 10)
                case 5: return .double(Double(next(41) - 20) / 4)
                default: return .function("length:", [string(depth: 0)])
                }
            }
            switch next(9) {
            case 0, 1, 2, 3:
                return .binary(["+", "-", "*", "/"][next(4)], number(depth: depth - 1), number(depth: depth - 1))
            case 4: return .negate(number(depth: depth - 1))
            case 5:
                return .function(["abs:", "sqrt:", "floor:", "ceiling:", "trunc:"][next(5)], [number(depth: depth - 1)])
            case 6: return .function("modulus:by:", [integer(), integer()])
            case 7:
                return .ternary(
                    ["a", "x", "b"][next(3)], [">", "<", "=="][next(3)], Int64(next(7)) - 3,
                    number(depth: depth - 1), number(depth: depth - 1))
            default: return .binary("+", number(depth: depth - 1), .null)
            }
        }

        mutating func integer() -> Node {
            [.field("a"), .field("b"), .int(Int64(next(9)) - 4)][next(3)]
        }

        mutating func string(depth: Int) -> Node {
            switch next(4) {
            case 0: return .field("s")
            case 1: return .field("t")
            case 2:
                return .function(
                    ["uppercase:", "lowercase:"][next(2)], [depth > 0 ? string(depth: depth - 1) : .field("s")])
            default: return .string(["Paris", "rome", "", "MiXeD 42"][next(4)])
            }
        }
    }

    static func item() throws -> EntitySchema {
        try EntitySchema(
            name: "Item",
            fields: [
                Field(name: "id", type: .int), Field(name: "a", type: .int),
                Field(name: "b", type: .int, isOptional: true),
                Field(name: "x", type: .double), Field(name: "y", type: .double, isOptional: true),
                Field(name: "s", type: .string), Field(name: "t", type: .string, isOptional: true)
            ],
            identifier: ["id"])
    }

    static func records() -> [[String: Value]] {
        var g = Generator(state: 7)
        let cities = ["Paris", "rome", "Zürich", "", "ABC def"]
        let others = ["x", "Yy", "Lisbon"]
        var out: [[String: Value]] = []
        for i in 0..<40 {
            var r: [String: Value] = [:]
            r["id"] = .int(Int64(i))
            r["a"] = .int(Int64(g.next(31)) - 15)
            r["b"] = i % 5 == 0 ? .null : .int(Int64(g.next(11)) - 5)
            r["x"] = .double(Double(g.next(81) - 40) / 8)
            r["y"] = i % 7 == 0 ? .null : .double(Double(g.next(17)) / 3)
            r["s"] = .string(cities[g.next(5)])
            r["t"] = i % 4 == 0 ? .null : .string(others[g.next(3)])
            out.append(r)
        }
        return out
    }

    @Test(
        "at least 200 generated expressions compute, for every record, what the in-memory evaluation computes, on both backends"
    )
    func oracle() async throws {
        let records = Self.records()
        var g = Generator(state: 2026)
        var expressions: [Node] = (0..<180).map { _ in g.number(depth: 1 + g.next(4)) }
        expressions += (0..<40).map { _ in g.string(depth: 2) }
        // A comparison needs a side that reads the record.
        expressions = expressions.map { e in
            e.readsField ? e : (e.isString ? .function("uppercase:", [.field("s")]) : .binary("+", e, .field("a")))
        }
        let answers = try await Backends.answers(entities: [try Self.item()]) { backend -> [String] in
            var batch = RecordBatch(entity: "Item", columns: ["id", "a", "b", "x", "y", "s", "t"])
            for r in records { batch.append(["id", "a", "b", "x", "y", "s", "t"].map { r[$0]! }) }
            _ = try await backend.write(batch)
            var wrong: [String] = []
            for e in expressions {
                // Each record's id with the value computed in memory: the
                // predicate holds for every record exactly when the SQL agrees.
                let terms = records.map { r -> String in
                    let v = e.value(r)
                    let expected: String
                    switch v {
                    case .null: expected = "nil"
                    case .int(let i): expected = "\(i)"
                    case .double(let d): expected = d.isFinite ? "\(d)" : "nil"
                    case .string(let s): expected = "'\(s)'"
                    case .bool(let b): expected = b ? "true" : "false"
                    }
                    return "(id == \(r["id"]!) AND \(e.text) == \(expected))"
                }
                let count = try await backend.count(
                    FetchDescriptor(entity: "Item", where: terms.joined(separator: " OR ")))
                if count != records.count {
                    var bad: [String] = []
                    for (r, term) in zip(records, terms)
                    where try await backend.count(FetchDescriptor(entity: "Item", where: term)) != 1 {
                        bad.append("id \(r["id"]!): expected \(e.value(r))")
                    }
                    wrong.append("\(e.text): \(bad.prefix(3).joined(separator: "; "))")
                }
            }
            return wrong
        }
        #expect(expressions.count >= 200)
        for (name, wrong) in answers {
            #expect(
                wrong.isEmpty, "\(name): \(wrong.count) of \(expressions.count) expressions differ: \(wrong.prefix(5))")
        }
    }
}
