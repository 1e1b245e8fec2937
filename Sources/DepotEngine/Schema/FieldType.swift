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
    var isTextual: Bool { self == .string || self == .date || self == .json }

    /// Whether values of this type are numbers.
    var isNumeric: Bool { self == .int || self == .double }
}

/// One declared field of an entity: a name, a type, and whether it may be null.
///
/// For example:
///
/// ```swift
/// let notes = try Field(name: "notes", declaration: "string?")
/// // notes.type == .string, notes.isOptional == true
/// ```
public struct Field: Sendable, Hashable, Codable {
    /// The field's name, also its column name; any characters but NUL.
    public var name: String
    /// The field's type.
    public var type: FieldType
    /// Whether the field may hold null.
    public var isOptional: Bool

    /// Creates a field.
    public init(name: String, type: FieldType, isOptional: Bool = false) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
    }

    /// Creates a field from a configuration declaration such as `"string?"`.
    ///
    /// - Throws: ``DepotError/Code/invalidSchema`` naming the field when the
    ///   type is not one of `string int double bool date json`.
    public init(name: String, declaration: String) throws {
        var text = declaration.trimmingWhitespace()
        let optional = text.hasSuffix("?")
        if optional { text.removeLast() }
        guard let type = FieldType(rawValue: text) else {
            throw DepotError(.invalidSchema,
                "field \(JSONText.quoted(name)) has type \(JSONText.quoted(declaration)), which is not one of "
                + "string, int, double, bool, date, json (add ? for an optional field)")
        }
        self.init(name: name, type: type, isOptional: optional)
    }

    /// The declaration text, e.g. `string?`.
    public var declaration: String { type.rawValue + (isOptional ? "?" : "") }
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
