import Foundation

/// A JSON value that keeps its type (a `true` is not a `1`), for records and
/// arguments of any shape.
enum JSONValue: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// The value at a key path of embedded records (DESIGN §12):
    /// `customer.name` reads the name of the embedded customer; through a
    /// to-many (`lines.sku`) it is the array of each line's value.
    func value(at path: String) -> JSONValue? {
        if let v = self[path] { return v }
        var dot = path.firstIndex(of: ".")
        while let d = dot {
            let head = String(path[..<d]), rest = String(path[path.index(after: d)...])
            switch self[head] {
            case .object?: return self[head]!.value(at: rest)
            case .array(let items)?: return .array(items.compactMap { $0.value(at: rest) })
            case .null?: return .null
            default: dot = path[path.index(after: d)...].firstIndex(of: ".")
            }
        }
        return nil
    }

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var int: Int? { if case .int(let i) = self { Int(i) } else { nil } }
    var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }

    /// Compact JSON text; object keys in `order` first, the rest sorted.
    func text(order: [String] = []) -> String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)") : "null"
        case .string(let s): return Self.quoted(s)
        case .array(let a): return "[" + a.map { $0.text() }.joined(separator: ",") + "]"
        case .object(let o):
            let keys = order.filter { o[$0] != nil } + o.keys.filter { !order.contains($0) }.sorted()
            return "{" + keys.map { Self.quoted($0) + ":" + o[$0]!.text() }.joined(separator: ",") + "}"
        }
    }

    var text: String { text() }

    /// How a table cell shows the value.
    var display: String {
        switch self {
        case .null: return ""
        case .string(let s): return s
        case .int(let i): return Format.grouped(Int(i))
        case .double(let d): return Format.decimal(d)
        // A to-many's values (lines.sku): one after the other.
        case .array(let items) where items.allSatisfy({ if case .object = $0 { false } else if case .array = $0 { false } else { true } }):
            return items.map(\.display).joined(separator: ", ")
        default: return text
        }
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
