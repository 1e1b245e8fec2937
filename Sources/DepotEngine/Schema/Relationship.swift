/// What deleting a record does to the records whose to-one points at it
/// (DESIGN §12), declared on the to-many side.
public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
    /// Delete them too, and theirs.
    case cascade
    /// Set their reference to null (the default).
    case nullify
    /// Refuse the delete while any refers to it.
    case deny
}

/// A declared relationship of an entity (DESIGN §12), the SwiftData analog
/// of a `@Relationship` property.
///
/// A **to-one** is stored in its entity's table: a column named after it
/// holding the target's identifier, or, for a target with a compound
/// identifier, one column per identifier field (`customer.region`,
/// `customer.number`). A **to-many** is the inverse of a to-one of its
/// target and is not stored.
///
/// For example:
///
/// ```swift
/// let customer = Relationship(name: "customer", target: "Customer", kind: .toOne(required: false))
/// let lines = Relationship(name: "lines", target: "OrderLine", kind: .toMany(inverse: "order", delete: .cascade))
/// ```
public struct Relationship: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A reference to one record of the target; `required` forbids null.
        case toOne(required: Bool)
        /// The records of the target whose to-one `inverse` points here.
        case toMany(inverse: String, delete: DeleteRule)
    }

    /// The relationship's name, also its column's name (or prefix) for a to-one.
    public let name: String
    /// The related entity.
    public let target: String
    public let kind: Kind

    public init(name: String, target: String, kind: Kind) {
        self.name = name
        self.target = target
        self.kind = kind
    }

    /// Whether this is a to-one.
    public var isToOne: Bool { if case .toOne = kind { true } else { false } }
}

/// An entity as the configuration declares it: its own fields and its
/// relationships, before the to-ones' columns are worked out from their
/// targets (``EntityDeclaration/resolve(_:)``).
public struct EntityDeclaration: Sendable, Hashable {
    public var name: String
    public var fields: [Field]
    /// Field or to-one names; a to-one stands for all of its columns.
    public var identifier: [String]
    public var indexes: [[String]]
    public var preserveOnDelete: [String]
    public var history: HistoryDetail
    public var relationships: [Relationship]
    /// The entity's name before (`renamed_from`), and each renamed field's.
    public var renamedFrom: String?
    public var fieldsRenamedFrom: [String: String] = [:]
    /// Each field's `convert` expression (DESIGN §18).
    public var fieldsConverted: [String: String] = [:]

    public init(
        name: String, fields: [Field], identifier: [String], indexes: [[String]] = [],
        preserveOnDelete: [String] = [], history: HistoryDetail = .fields, relationships: [Relationship] = []
    ) {
        self.name = name
        self.fields = fields
        self.identifier = identifier
        self.indexes = indexes
        self.preserveOnDelete = preserveOnDelete
        self.history = history
        self.relationships = relationships
    }

    /// Checks the relationships of a store's entities against each other and
    /// builds each entity with its to-ones' columns: a to-one's columns take
    /// the types of its target's identifier fields (which may themselves be
    /// a to-one's columns), are optional unless it is required, and are
    /// indexed unless they lead the identifier.
    ///
    /// Every mistake is reported at once, each naming the entity and the
    /// relationship: an unknown target; a name that is also a field's; an
    /// inverse that is not a to-one of the target back to the entity; a
    /// `nullify` rule on a required reference; a cycle of required
    /// references, which no import order can satisfy; a cycle through
    /// identifiers, whose columns' types could never be known.
    ///
    /// - Throws: ``DepotError/Code/invalidSchema`` listing them; what
    ///   ``EntitySchema/init(name:fields:identifier:indexes:preserveOnDelete:history:relationships:relationshipColumns:)`` throws.
    public static func resolve(_ declarations: [EntityDeclaration]) throws -> [EntitySchema] {
        let problems = problems(in: declarations)
        guard problems.isEmpty else { throw DepotError(.invalidSchema, problems.joined(separator: "; ")) }
        return try resolveEach(declarations).map { try $0.get() }
    }

    /// The mistakes in the relationships of a store's entities, each naming
    /// the entity and the relationship (see ``resolve(_:)``); empty when there
    /// are none.
    public static func problems(in declarations: [EntityDeclaration]) -> [String] {
        var problems: [String] = []
        let byName = Dictionary(declarations.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        func label(_ d: EntityDeclaration, _ r: Relationship) -> String {
            "relationship \(JSONText.quoted(d.name + "." + r.name))"
        }
        for d in declarations {
            var seen: Set<String> = []
            for r in d.relationships {
                if !seen.insert(r.name).inserted {
                    problems.append(
                        "entity \(JSONText.quoted(d.name)) declares relationship \(JSONText.quoted(r.name)) twice")
                }
                if d.fields.contains(where: { $0.name == r.name }) {
                    problems.append("\(label(d, r)) has the name of a field of \(JSONText.quoted(d.name)); rename one")
                }
                guard let target = byName[r.target] else {
                    problems.append(
                        "\(label(d, r)) points to \(JSONText.quoted(r.target)), which is not an entity of the store"
                            + DepotError.suggestion(for: r.target, in: declarations.map(\.name)))
                    continue
                }
                if case .toOne(false) = r.kind, d.identifier.contains(r.name) {
                    problems.append(
                        "\(label(d, r)) is part of the identifier of \(JSONText.quoted(d.name)), which is "
                            + "never null: declare it with required = true")
                }
                guard case .toMany(let inverse, let rule) = r.kind else { continue }
                guard let back = target.relationships.first(where: { $0.name == inverse }),
                    case .toOne(let required) = back.kind, back.target == d.name
                else {
                    problems.append(
                        "\(label(d, r)): its inverse \(JSONText.quoted(inverse)) must be a to-one of "
                            + "\(JSONText.quoted(target.name)) to \(JSONText.quoted(d.name)), declared as "
                            + "\(inverse) = { to = \(JSONText.quoted(d.name)) }")
                    continue
                }
                if rule == .nullify && required {
                    problems.append(
                        "\(label(d, r)) nullifies \(JSONText.quoted(target.name + "." + inverse)) on delete, "
                            + "but that reference is required; use delete = \"cascade\" or \"deny\"")
                }
            }
        }
        // Required references must leave an order in which records can be
        // written: no cycle among them (a record required to point at
        // itself included).
        if let cycle = Self.cycle(
            in: declarations.map { d in
                (
                    d.name,
                    d.relationships.compactMap { r -> String? in
                        if case .toOne(true) = r.kind, byName[r.target] != nil { r.target } else { nil }
                    }
                )
            })
        {
            problems.append(
                "required references go round in a cycle, "
                    + cycle.map(JSONText.quoted).joined(separator: " -> ")
                    + ", so no record of them could be written first; make one of them optional")
        }
        // The columns of a to-one in an identifier depend on the target's identifier.
        if let cycle = Self.cycle(
            in: declarations.map { d in
                (
                    d.name,
                    d.identifier.compactMap { name in
                        d.relationships.first { $0.name == name && $0.isToOne }.flatMap {
                            byName[$0.target] != nil ? $0.target : nil
                        }
                    }
                )
            })
        {
            problems.append(
                "identifiers refer to each other in a cycle, "
                    + cycle.map(JSONText.quoted).joined(separator: " -> ") + ", so their columns' types cannot be known"
            )
        }
        return problems
    }

    /// Each entity built with its to-ones' columns, or what its own
    /// declaration gets wrong (an unknown field, say), in the order given.
    /// Call it once ``problems(in:)`` has found nothing wrong between them.
    public static func resolveEach(_ declarations: [EntityDeclaration]) -> [Result<EntitySchema, any Error>] {
        let byName = Dictionary(declarations.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        // The identifier's fields of each entity, a to-one in it standing
        // for its columns (acyclic: checked above).
        var identifiers: [String: [Field]] = [:]
        func identifierFields(_ d: EntityDeclaration) -> [Field] {
            if let known = identifiers[d.name] { return known }
            var out: [Field] = []
            for name in d.identifier {
                if let f = d.fields.first(where: { $0.name == name }) {
                    out.append(f)
                } else if let r = d.relationships.first(where: { $0.name == name && $0.isToOne }),
                    let t = byName[r.target]
                {
                    out += Self.columns(of: r, targetIdentifier: identifierFields(t), required: true)
                }
                // Anything else is an unknown field, which EntitySchema reports.
            }
            identifiers[d.name] = out
            return out
        }
        return declarations.map { d in
            Result {
                var fields = d.fields
                var columns: [String: [String]] = [:]
                for r in d.relationships {
                    guard case .toOne(let required) = r.kind, let target = byName[r.target] else { continue }
                    let added = Self.columns(of: r, targetIdentifier: identifierFields(target), required: required)
                    columns[r.name] = added.map(\.name)
                    fields += added
                }
                let identifier = d.identifier.flatMap { columns[$0] ?? [$0] }
                var indexes = d.indexes.map { $0.flatMap { columns[$0] ?? [$0] } }
                // Each to-one is indexed (deletes and to-many paths look it up),
                // unless the identifier or a declared index already leads with it.
                for r in d.relationships {
                    guard let c = columns[r.name], !identifier.starts(with: c),
                        !indexes.contains(where: { $0.starts(with: c) })
                    else { continue }
                    indexes.append(c)
                }
                var entity = try EntitySchema(
                    name: d.name, fields: fields, identifier: identifier, indexes: indexes,
                    preserveOnDelete: d.preserveOnDelete.flatMap { columns[$0] ?? [$0] },
                    history: d.history, relationships: d.relationships, relationshipColumns: columns)
                entity.renamedFrom = d.renamedFrom
                entity.fieldsRenamedFrom = d.fieldsRenamedFrom
                entity.fieldsConverted = d.fieldsConverted
                return entity
            }
        }
    }

    /// The columns of to-one `r`: one named after it when the target's
    /// identifier is one field, else `r.field` for each of its fields.
    static func columns(of r: Relationship, targetIdentifier: [Field], required: Bool) -> [Field] {
        targetIdentifier.map { f in
            Field(
                name: targetIdentifier.count == 1 ? r.name : r.name + "." + f.name, type: f.type, isOptional: !required)
        }
    }

    /// A cycle in a graph given as (node, successors), as the nodes along
    /// it with the first repeated at the end, or nil.
    static func cycle(in graph: [(String, [String])]) -> [String]? {
        let next = Dictionary(graph, uniquingKeysWith: { a, b in a + b })
        var state: [String: Int] = [:]  // 1: on the path, 2: done
        var path: [String] = []
        func visit(_ node: String) -> [String]? {
            if state[node] == 2 { return nil }
            if state[node] == 1, let start = path.firstIndex(of: node) { return Array(path[start...]) + [node] }
            state[node] = 1
            path.append(node)
            for n in next[node] ?? [] { if let c = visit(n) { return c } }
            path.removeLast()
            state[node] = 2
            return nil
        }
        for (node, _) in graph { if let c = visit(node) { return c } }
        return nil
    }
}
