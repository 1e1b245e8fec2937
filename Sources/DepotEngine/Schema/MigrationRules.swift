import Foundation

/// What may change between the entity a store holds and the one configured,
/// the same for every backend: SQLite's ``SchemaMigrator`` and the
/// PostgreSQL backend's migrator ask it, and apply what it allows.
package enum MigrationRules {
    /// What a store keeps of an entity in `depot_schema`, as JSON.
    package struct Definition: Codable, Sendable {
        package var fields: [Field]
        package var identifier: [String]

        package init(fields: [Field], identifier: [String]) {
            self.fields = fields
            self.identifier = identifier
        }

        package init(_ entity: EntitySchema) {
            self.init(fields: entity.fields, identifier: entity.identifier)
        }

        /// The text a store keeps.
        package var json: String {
            get throws { String(decoding: try JSONEncoder().encode(self), as: UTF8.self) }
        }
    }

    /// What opening `entity` over what the store holds comes to.
    package struct Outcome {
        /// Why it cannot migrate; empty when it can.
        package var problems: [String] = []
        /// New optional fields, to add as columns.
        package var added: [Field] = []
        /// The fields a migrate job converts (`convert`, DESIGN §18).
        package var changes: [FieldChange] = []
        /// Whether the identifier changes (a migrate job deletes the
        /// records whose new identifier is null or another's).
        package var keyChanged = false
    }

    /// The stored fields that were optional and are now required: the
    /// caller counts their nulls for ``check(_:stored:nulls:)``.
    package static func fieldsBecomingRequired(_ entity: EntitySchema, stored: Definition) -> [String] {
        let before = Dictionary(stored.fields.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        return entity.fields.filter { field in
            guard let old = before[field.name] else { return false }
            return old.type == field.type && old.isOptional && !field.isOptional
        }.map(\.name)
    }

    /// Judges `entity` against its stored definition.
    ///
    /// - Parameter nulls: for each field of ``fieldsBecomingRequired(_:stored:)``,
    ///   how many stored records hold null in it.
    package static func check(_ entity: EntitySchema, stored old: Definition, nulls: [String: Int]) -> Outcome {
        var outcome = Outcome()
        let entityName = "entity \(JSONText.quoted(entity.name))"
        let oldByName = Dictionary(old.fields.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        // A new identifier (a new unique key) migrates when its fields are
        // stored already with their types, and no relationship holds them.
        let newKey = old.identifier != entity.identifier
        if newKey {
            let changed = "\(entityName): the identifier changed from \(old.identifier) to \(entity.identifier)"
            let held = Set(entity.relationshipColumns.values.joined())
            if let f = entity.identifier.first(where: {
                oldByName[$0]?.type != entity.fields[entity.position(of: $0)!].type
            }) {
                outcome.problems.append(
                    "\(changed), and field \(JSONText.quoted(f)) of the new one is not stored with its type; "
                        + "migrate the field first, then change the identifier")
            } else if let f = (old.identifier + entity.identifier).first(where: held.contains) {
                outcome.problems.append(
                    "\(changed), and field \(JSONText.quoted(f)) holds a relationship; "
                        + "export the records and import them into a new entity")
            } else {
                outcome.keyChanged = true
            }
        }
        for field in old.fields where entity.position(of: field.name) == nil {
            outcome.problems.append(
                "\(entityName): field \(JSONText.quoted(field.name)) is in the store but no "
                    + "longer declared; declare it again (\(field.name) = \"\(field.type.rawValue)?\" keeps its data)")
        }
        for field in entity.fields {
            let fieldName = "\(entityName), field \(JSONText.quoted(field.name))"
            let convert = entity.fieldsConverted[field.name]
            let before = oldByName[field.name]
            let retyped = before.map { $0.type != field.type } ?? false
            // A field of a new identifier may hold null: those records are rejected.
            let nullsLeft =
                before.map { $0.isOptional && !field.isOptional && (nulls[field.name] ?? 0) > 0 } ?? false
                && !(newKey && entity.identifier.contains(field.name))
            // A change the stored values must go through: a migrate job
            // converts them when the field says how.
            if let convert, before == nil || retyped || nullsLeft {
                if entity.identifier.contains(field.name) || old.identifier.contains(field.name) {
                    outcome.problems.append(
                        "\(fieldName): a field of the identifier cannot be converted; export the records "
                            + "and import them into a new entity")
                } else if let r = entity.relationshipColumns.first(where: { $0.value.contains(field.name) })?.key {
                    outcome.problems.append(
                        "\(fieldName): it holds relationship \(JSONText.quoted(r)) and cannot be converted")
                } else {
                    outcome.changes.append(FieldChange(from: before, to: field, convert: convert))
                }
                continue
            }
            let hint = "give convert = \"…\" to convert the stored values with a migrate job"
            guard let before else {
                if field.isOptional {
                    outcome.added.append(field)
                } else if let r = entity.relationshipColumns.first(where: { $0.value.contains(field.name) })?.key {
                    outcome.problems.append(
                        "\(entityName), relationship \(JSONText.quoted(r)): a new to-one must be "
                            + "optional so that the stored records can migrate; declare it without required = true")
                } else {
                    outcome.problems.append(
                        "\(fieldName): a new field must be optional so that the stored records "
                            + "can migrate; declare it as \"\(field.type.rawValue)?\", or \(hint)")
                }
                continue
            }
            if retyped {
                outcome.problems.append(
                    "\(fieldName): the type changed from \(before.type.rawValue) to "
                        + "\(field.type.rawValue), which cannot migrate in place; keep \(before.type.rawValue), "
                        + "add a new field, or \(hint)")
            } else if nullsLeft, let count = nulls[field.name] {
                outcome.problems.append(
                    "\(fieldName): it was optional and \(count) records hold null in it, "
                        + "so it cannot become required; keep it optional, fill it first, or \(hint)")
            }
        }
        return outcome
    }

    /// The migration of `configured` when `outcome` has changes and no
    /// problem; a problem in building it goes to `problems`.
    package static func plan(
        _ configured: EntitySchema, stored: Definition, _ outcome: Outcome, problems: inout [String]
    ) -> MigrationPlan? {
        guard outcome.problems.isEmpty, !outcome.changes.isEmpty || outcome.keyChanged else { return nil }
        do {
            let serving = try serving(configured, stored: stored, changes: outcome.changes)
            return MigrationPlan(target: configured, serving: serving, changes: outcome.changes)
        } catch {
            problems.append((error as? DepotError)?.message ?? "\(error)")
            return nil
        }
    }

    /// The entity a store serves while `changes` migrate: the configured
    /// one with each changed field as the store holds it (a new one left
    /// out), and the indexes and tombstone fields it can have.
    package static func serving(_ entity: EntitySchema, stored: Definition, changes: [FieldChange]) throws
        -> EntitySchema
    {
        var changed = Set(changes.map(\.to.name))
        if stored.identifier != entity.identifier {
            // Both identifiers' fields as stored: the old one is served until the switch.
            changed.formUnion(stored.identifier + entity.identifier)
        }
        let old = Dictionary(stored.fields.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let fields = entity.fields.compactMap { changed.contains($0.name) ? old[$0.name] : $0 }
        let present = Set(fields.map(\.name))
        var serving = try EntitySchema(
            name: entity.name, fields: fields, identifier: stored.identifier,
            indexes: entity.indexes.filter { $0.allSatisfy(present.contains) },
            preserveOnDelete: entity.preserveOnDelete.filter(present.contains), history: entity.history,
            relationships: entity.relationships, relationshipColumns: entity.relationshipColumns)
        serving.renamedFrom = entity.renamedFrom
        serving.fieldsRenamedFrom = entity.fieldsRenamedFrom
        return serving
    }

    /// A problem for a table of the entity's name that Depot did not make.
    package static func foreignTable(_ entity: EntitySchema) -> String {
        "entity \(JSONText.quoted(entity.name)): the store already has a table of that name that Depot did "
            + "not create; rename the entity or the table"
    }
}

/// A field a migrate job converts (DESIGN §18): a change of type, a new
/// field with `convert`, or an optional field made required while records
/// hold null in it.
public struct FieldChange: Sendable, Hashable {
    /// The field as the store holds it; nil for a new field.
    package var from: Field?
    /// The field as configured.
    package var to: Field
    /// The expression (DESIGN §17) that computes its value from a stored record.
    package var convert: String

    /// The column the job writes the converted values to until the switch.
    package var shadow: String { "depot_new_" + to.name }
}

/// A migrate job's work on one entity: the entity configured, the one
/// served until the switch, and the fields converted.
public struct MigrationPlan: Sendable {
    package var target: EntitySchema
    package var serving: EntitySchema
    package var changes: [FieldChange]

    package init(target: EntitySchema, serving: EntitySchema, changes: [FieldChange]) {
        self.target = target
        self.serving = serving
        self.changes = changes
    }

    /// The column in which a migration before this release kept each
    /// converted record's token (a record's conversion is now stale when its
    /// token is past the one issued when the pass that converted it began:
    /// tokens grow, and saves are one at a time on either backend). A
    /// PostgreSQL store drops it at the switch, if a job left it.
    package static let legacyTokenColumn = "depot_mtoken"
    /// The column that holds why a record's conversion failed.
    package static let rejectColumn = "depot_mreject"

    /// Whether the identifier changes (a new unique key).
    package var keyChanged: Bool { target.identifier != serving.identifier }

    /// What a resumed job checks its checkpoint against: a plan changed
    /// since (another `convert`, another identifier) starts over.
    package var digest: String {
        changes.map { "\($0.to.name):\($0.from?.declaration ?? "-")>\($0.to.declaration)=\($0.convert)" }
            .joined(separator: ";") + "|\(serving.identifier)>\(target.identifier)"
    }

    /// The changes as people read them: `budget double → int`.
    package var summary: String {
        (changes.map { "\($0.to.name) \($0.from?.declaration ?? "(new)") → \($0.to.declaration)" }
            + (keyChanged ? ["identifier \(serving.identifier) → \(target.identifier)"] : []))
            .joined(separator: ", ")
    }
}
