/// One value of a record's field, as the engine stores and compares it.
///
/// A `Value` is already converted to its field's type: a `date` field holds a
/// ``Value/string(_:)`` in the engine's canonical ISO 8601 form (see
/// ``DateValue``), a `json` field holds the JSON text as a string, and a
/// `bool` field holds ``Value/bool(_:)``.
///
/// For example:
///
/// ```swift
/// let row: [Value] = [.string("t1"), .string("Paris"), .double(1200), .bool(true), .null]
/// ```
public enum Value: Sendable, Hashable {
    /// The absence of a value (SQL `NULL`, JSON `null`).
    case null
    /// A boolean, stored by SQLite as the integer 0 or 1.
    case bool(Bool)
    /// A 64-bit signed integer.
    case int(Int64)
    /// A double-precision number.
    case double(Double)
    /// A string; also the stored form of `date` and `json` fields.
    case string(String)

    /// Whether the value is ``null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short name of the value's kind, for error messages.
    package var kindName: String {
        switch self {
        case .null: "nil"
        case .bool: "a boolean"
        case .int: "an integer"
        case .double: "a number"
        case .string: "a string"
        }
    }
}

extension Value: CustomStringConvertible {
    /// The value as a person reads it: strings quoted, `nil` for null.
    public var description: String {
        switch self {
        case .null: "nil"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): JSONText.number(d)
        case .string(let s): JSONText.quoted(s)
        }
    }
}

extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    /// Creates a ``string(_:)`` value.
    public init(stringLiteral value: String) { self = .string(value) }
    /// Creates an ``int(_:)`` value.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// Creates a ``double(_:)`` value.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// Creates a ``bool(_:)`` value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Creates the ``null`` value.
    public init(nilLiteral: ()) { self = .null }
}
