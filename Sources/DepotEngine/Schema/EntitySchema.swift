/// A declared record type: its fields, its identifier, its indexes.
///
/// The SwiftData analog is a `@Model` class with `#Unique` and `#Index`.
/// An entity is stored as one table named after it, one column per field,
/// the identifier `UNIQUE NOT NULL`.
///
/// For example:
///
/// ```swift
/// let trip = try EntitySchema(
///     name: "Trip",
///     fields: [
///         Field(name: "id", type: .string),
///         Field(name: "destination", type: .string, isOptional: true),
///         Field(name: "budget", type: .double),
///     ],
///     identifier: ["id"],
///     indexes: [["destination"]])
/// ```
public struct EntitySchema: Sendable, Hashable {
    /// The entity's name, also its table's name.
    public let name: String
    /// The fields in declaration order.
    public let fields: [Field]
    /// The field names that make the identifier: one, or several for a compound key.
    public let identifier: [String]
    /// Secondary indexes, each a list of field names.
    public let indexes: [[String]]
    /// Fields whose values a deleted record leaves in its history tombstone.
    public let preserveOnDelete: [String]
    /// What the history keeps of each change to these records.
    public let history: HistoryDetail
    /// The relationships (DESIGN §12), in declaration order.
    public let relationships: [Relationship]
    /// For each to-one, the names of the fields that store it.
    public let relationshipColumns: [String: [String]]
    /// The name the entity had before (`renamed_from`, DESIGN §18): a store
    /// that holds it under that name renames it in place when it opens.
    public var renamedFrom: String?
    /// For each field renamed so, the name it had before.
    public var fieldsRenamedFrom: [String: String] = [:]
    /// For each field given a `convert` (DESIGN §18), the expression that
    /// computes its value from a stored record when its type changes, when
    /// it is new and required, or when it becomes required.
    public var fieldsConverted: [String: String] = [:]

    /// The positions in ``fields`` of the identifier's fields.
    public let identifierIndexes: [Int]
    /// The positions in ``fields`` of the tombstone's fields.
    public let preserveIndexes: [Int]
    private let positions: [String: Int]

    /// Creates and validates an entity.
    ///
    /// - Throws: ``DepotError/Code/invalidSchema`` with every problem found:
    ///   an empty or reserved name, two fields whose names differ only by case
    ///   (SQLite's column names do not), an identifier, index or
    ///   `preserve_on_delete` naming an unknown field, an optional identifier field.
    public init(
        name: String, fields: [Field], identifier: [String],
        indexes: [[String]] = [], preserveOnDelete: [String] = [],
        history: HistoryDetail = .fields, relationships: [Relationship] = [],
        relationshipColumns: [String: [String]] = [:]
    ) throws {
        var problems: [String] = []
        let quotedName = JSONText.quoted(name)
        if name.isEmpty { problems.append("an entity has an empty name") }
        if name.lowercased().hasPrefix("depot_") || name.lowercased().hasPrefix("sqlite_") {
            problems.append("entity \(quotedName): names starting with depot_ or sqlite_ are reserved")
        }
        if name.utf8.contains(0) { problems.append("entity \(quotedName): a name cannot contain NUL") }
        if fields.isEmpty { problems.append("entity \(quotedName) declares no fields") }
        var positions: [String: Int] = [:]
        var lowered: [String: String] = [:]
        for (i, field) in fields.enumerated() {
            if field.name.isEmpty || field.name.utf8.contains(0) {
                problems.append("entity \(quotedName) has a field with an empty name or a NUL character")
                continue
            }
            if let other = lowered[field.name.lowercased()] {
                problems.append(
                    "entity \(quotedName): fields \(JSONText.quoted(other)) and "
                        + "\(JSONText.quoted(field.name)) differ only by case, which SQLite columns cannot tell apart")
                continue
            }
            if field.name.lowercased() == "rowid" || field.name.lowercased().hasPrefix("depot_") {
                problems.append("entity \(quotedName): field name \(JSONText.quoted(field.name)) is reserved")
            }
            lowered[field.name.lowercased()] = field.name
            positions[field.name] = i
        }
        func check(_ list: [String], _ what: String) {
            for f in list where positions[f] == nil {
                problems.append(
                    "entity \(quotedName): \(what) names unknown field \(JSONText.quoted(f))"
                        + DepotError.suggestion(for: f, in: fields.map(\.name)))
            }
        }
        if identifier.isEmpty {
            problems.append("entity \(quotedName) has no identifier: name one field, or a list of fields")
        }
        if Set(identifier).count != identifier.count {
            problems.append("entity \(quotedName): the identifier names a field twice")
        }
        check(identifier, "identifier")
        for f in identifier {
            if let p = positions[f], fields[p].isOptional {
                problems.append(
                    "entity \(quotedName): identifier field \(JSONText.quoted(f)) is optional; "
                        + "an identifier is never null, so declare it without ?")
            }
        }
        for index in indexes {
            if index.isEmpty { problems.append("entity \(quotedName) has an empty index") }
            check(index, "an index")
        }
        check(preserveOnDelete, "preserve_on_delete")
        guard problems.isEmpty else {
            throw DepotError(.invalidSchema, problems.joined(separator: "; "))
        }
        self.name = name
        self.fields = fields
        self.identifier = identifier
        self.indexes = indexes
        self.preserveOnDelete = preserveOnDelete
        self.history = history
        self.relationships = relationships
        self.relationshipColumns = relationshipColumns
        self.positions = positions
        self.identifierIndexes = identifier.map { positions[$0]! }
        self.preserveIndexes = preserveOnDelete.map { positions[$0]! }
    }

    /// The position of the field called `name` in ``fields``, if there is one.
    public func position(of name: String) -> Int? { positions[name] }

    /// The field called `name`.
    ///
    /// - Throws: ``DepotError/Code/unknownField`` with the closest name as a hint.
    public func field(named name: String) throws -> Field {
        guard let p = positions[name] else {
            throw DepotError(
                .unknownField,
                "entity \(JSONText.quoted(self.name)) has no field "
                    + "\(JSONText.quoted(name))" + DepotError.suggestion(for: name, in: fields.map(\.name)))
        }
        return fields[p]
    }

    /// The SQL name of the entity's table, quoted.
    var table: String { SQL.quote(name) }
}
