import GRDB
import GRDBSQLite

/// A reference that names no record of its target (DESIGN §12): kept by an
/// import with `references = "defer"` whose target has not arrived.
public struct DanglingReference: Sendable, Hashable {
    /// The referring record's entity and identifier.
    public var entity: String
    public var identifier: Identifier
    /// The to-one, and the entity it points at.
    public var relationship: String
    public var target: String
    /// The identifier it names, which no record of `target` has.
    public var reference: Identifier

    package init(entity: String, identifier: Identifier, relationship: String, target: String, reference: Identifier) {
        self.entity = entity
        self.identifier = identifier
        self.relationship = relationship
        self.target = target
        self.reference = reference
    }
}

/// What ``StoreReading/danglingReferences(limit:)`` found.
public struct ReferenceCheck: Sendable, Hashable {
    /// One per to-one of the store, in configuration order, with how many
    /// records of its entity name a missing record.
    public var relationships: [(entity: String, relationship: String, target: String, dangling: Int)] {
        counts.map { ($0.entity, $0.relationship, $0.target, $0.dangling) }
    }
    struct Count: Sendable, Hashable {
        var entity: String, relationship: String, target: String, dangling: Int
    }
    var counts: [Count] = []
    /// All of them, up to the limit asked for, by entity and relationship.
    public var dangling: [DanglingReference] = []
    /// How many there are in all.
    public var total: Int { counts.reduce(0) { $0 + $1.dangling } }

    package init() {}

    /// Records how many records of `entity` name no record through `relationship`.
    package mutating func count(entity: String, relationship: Relationship, dangling: Int) {
        counts.append(
            .init(entity: entity, relationship: relationship.name, target: relationship.target, dangling: dangling))
    }

    /// One to-one to check: the SQL condition (on alias `e`) of a record
    /// whose reference names no record of the target, and the fields to
    /// report (the record's identifier, then the reference's columns).
    package struct Probe: Sendable {
        package let relationship: Relationship
        package let missing: String
        package let identifierFields: [Field]
        package let referenceFields: [Field]
    }

    /// The probes of `entity`'s to-ones, in configuration order.
    package static func probes(_ entity: EntitySchema, schema: StoreSchema) throws -> [Probe] {
        var out: [Probe] = []
        for r in entity.relationships where r.isToOne {
            guard let columns = entity.relationshipColumns[r.name] else { continue }
            let target = try schema.entity(r.target)
            // Indexed both ways: the to-one's index, the target's identifier.
            let missing =
                columns.map { "e.\(SQL.quote($0)) IS NOT NULL" }.joined(separator: " AND ")
                + " AND NOT EXISTS (SELECT 1 FROM \(target.table) AS t WHERE "
                + zip(target.identifier, columns).map { "t.\(SQL.quote($0)) = e.\(SQL.quote($1))" }
                .joined(separator: " AND ") + ")"
            out.append(
                Probe(
                    relationship: r, missing: missing,
                    identifierFields: entity.identifierIndexes.map { entity.fields[$0] },
                    referenceFields: columns.map { entity.fields[entity.position(of: $0)!] }))
        }
        return out
    }
}
