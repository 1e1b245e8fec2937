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
            throw DepotError(
                .invalidSchema,
                "field \(JSONText.quoted(name)) has type \(JSONText.quoted(declaration)), which is not one of "
                    + "string, int, double, bool, date, json (add ? for an optional field)")
        }
        self.init(name: name, type: type, isOptional: optional)
    }

    /// The declaration text, e.g. `string?`.
    public var declaration: String { type.rawValue + (isOptional ? "?" : "") }
}
