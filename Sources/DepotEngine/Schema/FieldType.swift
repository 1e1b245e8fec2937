/// The type of an entity's field, as declared in the configuration.
///
/// For example, the declaration `budget = "double"` gives ``double``;
/// `notes = "string?"` gives ``string`` on an optional ``Field``.
public enum FieldType: String, Sendable, Hashable, CaseIterable, Codable {
    /// Text.
    case string
    /// A 64-bit signed integer.
    case int
    /// A double-precision number.
    case double
    /// `true` or `false`, stored as 0 or 1.
    case bool
    /// An ISO 8601 date or date-time, stored as canonical UTC text (see ``DateValue``).
    case date
    /// Any JSON value, stored as its JSON text.
    case json

    /// The SQLite column type of a `STRICT` table for this field type.
    var sqlType: String {
        switch self {
        case .string, .date, .json: "TEXT"
        case .int, .bool: "INTEGER"
        case .double: "REAL"
        }
    }

    /// Whether values of this type are compared as text.
    package var isTextual: Bool { self == .string || self == .date || self == .json }

    /// Whether values of this type are numbers.
    var isNumeric: Bool { self == .int || self == .double }
}

extension String {
    /// The string without leading and trailing white space.
    package func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
