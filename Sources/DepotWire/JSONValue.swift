import Foundation

/// A JSON value that keeps its type (a `true` is not a `1`): a record's
/// field, a predicate's argument, any part of the daemon's answers.
///
/// Literals make arguments short:
///
/// ```swift
/// let arguments: [String: JSONValue] = ["city": "Paris", "min": 1000, "favourite": true]
/// let city = record["destination"]?.string        // "Paris"
/// ```
public enum JSONValue: Codable, Hashable, Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `null`: a field without a value.
    ///
    /// ```swift
    /// if record["endDate"] == .null { print("open-ended") }
    /// ```
    case null
    /// `true` or `false`.
    ///
    /// ```swift
    /// if case .bool(true) = record["isFavorite"] { star() }
    /// ```
    case bool(Bool)
    /// A number without a fraction or exponent: `42`.
    ///
    /// ```swift
    /// if case .int(let n) = answer["count"] { print(n) }
    /// ```
    case int(Int64)
    /// Any other number: `2.5`, `1e300`.
    ///
    /// ```swift
    /// if case .double(let b) = record["budget"] { total += b }
    /// ```
    case double(Double)
    /// A string.
    ///
    /// ```swift
    /// if case .string(let name) = record["name"] { print(name) }
    /// ```
    case string(String)
    /// An array: a to-many's embedded records, a group's identifiers.
    ///
    /// ```swift
    /// if case .array(let lines) = order["lines"] { print(lines.count, "lines") }
    /// ```
    case array([JSONValue])
    /// An object: a record, an embedded to-one.
    ///
    /// ```swift
    /// if case .object(let customer) = order["customer"] { print(customer["name"] ?? .null) }
    /// ```
    case object([String: JSONValue])

    /// `"text"` as a value.
    ///
    /// ```swift
    /// let v: JSONValue = "Paris"
    /// ```
    public init(stringLiteral value: String) { self = .string(value) }
    /// `42` as a value.
    ///
    /// ```swift
    /// let v: JSONValue = 42
    /// ```
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// `2.5` as a value.
    ///
    /// ```swift
    /// let v: JSONValue = 2.5
    /// ```
    public init(floatLiteral value: Double) { self = .double(value) }
    /// `true` as a value.
    ///
    /// ```swift
    /// let v: JSONValue = true
    /// ```
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// `nil` as JSON's `null`.
    ///
    /// ```swift
    /// let arguments: [String: JSONValue] = ["end": nil]
    /// ```
    public init(nilLiteral: ()) { self = .null }
    /// `[1, "a"]` as a JSON array.
    ///
    /// ```swift
    /// let compound: JSONValue = ["o-17", 3]     // a compound identifier
    /// ```
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// `["a": 1]` as a JSON object.
    ///
    /// ```swift
    /// let values: JSONValue = ["budget": 950.0, "isFavorite": true]
    /// ```
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }

    /// JSON has one kind of number: `1000` and `1000.0` are equal (a
    /// decoder may read `1000.0` as an integer), as are two NaNs never.
    ///
    /// ```swift
    /// JSONValue.int(1000) == JSONValue.double(1000.0)     // true
    /// ```
    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.int(let x), .int(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.int(let i), .double(let d)), (.double(let d), .int(let i)): Double(exactly: i) == d
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)): x == y
        default: false
        }
    }

    /// Hashes as ``==`` compares: a whole double as the integer it equals.
    ///
    /// ```swift
    /// let seen: Set<JSONValue> = [.int(1), .double(1.0)]     // one element
    /// ```
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .int(let i): hasher.combine(i)
        case .double(let d):
            if let i = Int64(exactly: d) { hasher.combine(i) } else { hasher.combine(d) }
        case .string(let s): hasher.combine(s)
        case .array(let a): hasher.combine(a)
        case .object(let o): hasher.combine(o)
        }
    }

    /// Decodes any JSON value, keeping integers apart from doubles.
    ///
    /// ```swift
    /// let value = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"a":[1,2.5,null]}"#.utf8))
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self), d.isFinite {
            // 1e400 is no number a store can keep: refused, not infinity.
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as the JSON it is.
    ///
    /// ```swift
    /// let data = try JSONEncoder().encode(JSONValue.object(["a": 1]))
    /// ```
    public func encode(to encoder: any Encoder) throws {
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

    /// An object's member, or `nil` (also for a value that is not an object).
    ///
    /// ```swift
    /// record["budget"]?.double
    /// ```
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// The value at a key path of embedded records (DESIGN §12):
    /// `customer.name` reads the name of the embedded customer; through a
    /// to-many (`lines.sku`) it is the array of each line's value.
    ///
    /// ```swift
    /// order.value(at: "customer.name")     // .string("Ada")
    /// ```
    public func value(at path: String) -> JSONValue? {
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

    /// The text of a string, else `nil`: `record["name"]?.string`.
    ///
    /// ```swift
    /// let name = record["name"]?.string ?? "?"
    /// ```
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    /// The integer, else `nil`: `answer["count"]?.int`.
    ///
    /// ```swift
    /// let nights = record["nights"]?.int ?? 0
    /// ```
    public var int: Int? { if case .int(let i) = self { Int(i) } else { nil } }
    /// The number, an integer's too, else `nil`: `record["budget"]?.double`.
    ///
    /// ```swift
    /// let budget = record["budget"]?.double ?? 0
    /// ```
    public var double: Double? {
        switch self {
        case .double(let d): d
        case .int(let i): Double(i)
        default: nil
        }
    }
    /// The boolean, else `nil`: `record["isFavorite"]?.bool`.
    ///
    /// ```swift
    /// let favourite = record["isFavorite"]?.bool == true
    /// ```
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// The elements of an array, else `nil`: `group["identifiers"]?.array`.
    ///
    /// ```swift
    /// let lines = order["lines"]?.array ?? []
    /// ```
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    /// The members of an object, else `nil`.
    ///
    /// ```swift
    /// let customer = order["customer"]?.object ?? [:]
    /// ```
    public var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    /// Whether the value is JSON's `null`.
    ///
    /// ```swift
    /// let open = record["endDate"]?.isNull ?? true
    /// ```
    public var isNull: Bool { self == .null }

    /// Compact JSON text; object keys in `order` first, the rest sorted.
    ///
    /// ```swift
    /// JSONValue.object(["b": 1, "a": true]).text()     // {"a":true,"b":1}
    /// ```
    public func text(order: [String] = []) -> String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d):
            return d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)") : "null"
        case .string(let s): return Self.quoted(s)
        case .array(let a): return "[" + a.map { $0.text() }.joined(separator: ",") + "]"
        case .object(let o):
            let keys = order.filter { o[$0] != nil } + o.keys.filter { !order.contains($0) }.sorted()
            return "{" + keys.map { Self.quoted($0) + ":" + o[$0]!.text() }.joined(separator: ",") + "}"
        }
    }

    /// Compact JSON text, object keys sorted: `value.text`.
    ///
    /// ```swift
    /// print(record["tags"]?.text ?? "")     // ["a","b"]
    /// ```
    public var text: String { text() }

    /// `s` as a JSON string literal, quotes included: `JSONValue.quoted("a\"b")` is `"a\"b"`.
    ///
    /// ```swift
    /// let literal = JSONValue.quoted(userInput)     // safe inside JSON text
    /// ```
    public static func quoted(_ s: String) -> String {
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
