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
    }

    /// What opening `entity` over what the store holds comes to.
    package struct Outcome {
        /// Why it cannot migrate; empty when it can.
        package var problems: [String] = []
        /// New optional fields, to add as columns.
        package var added: [Field] = []
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
        if old.identifier != entity.identifier {
            outcome.problems.append(
                "\(entityName): the identifier changed from \(old.identifier) to "
                    + "\(entity.identifier); a store cannot change its identifier: export the records "
                    + "and import them into a new store")
        }
        let oldByName = Dictionary(old.fields.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for field in old.fields where entity.position(of: field.name) == nil {
            outcome.problems.append(
                "\(entityName): field \(JSONText.quoted(field.name)) is in the store but no "
                    + "longer declared; declare it again (\(field.name) = \"\(field.type.rawValue)?\" keeps its data)")
        }
        for field in entity.fields {
            let fieldName = "\(entityName), field \(JSONText.quoted(field.name))"
            guard let before = oldByName[field.name] else {
                if field.isOptional {
                    outcome.added.append(field)
                } else if let r = entity.relationshipColumns.first(where: { $0.value.contains(field.name) })?.key {
                    outcome.problems.append(
                        "\(entityName), relationship \(JSONText.quoted(r)): a new to-one must be "
                            + "optional so that the stored records can migrate; declare it without required = true")
                } else {
                    outcome.problems.append(
                        "\(fieldName): a new field must be optional so that the stored records "
                            + "can migrate; declare it as \"\(field.type.rawValue)?\"")
                }
                continue
            }
            if before.type != field.type {
                outcome.problems.append(
                    "\(fieldName): the type changed from \(before.type.rawValue) to "
                        + "\(field.type.rawValue), which cannot migrate in place; keep \(before.type.rawValue) "
                        + "or add a new field")
            } else if before.isOptional && !field.isOptional, let count = nulls[field.name], count > 0 {
                outcome.problems.append(
                    "\(fieldName): it was optional and \(count) records hold null in it, "
                        + "so it cannot become required; keep it optional or fill it first")
            }
        }
        return outcome
    }

    /// A problem for a table of the entity's name that Depot did not make.
    package static func foreignTable(_ entity: EntitySchema) -> String {
        "entity \(JSONText.quoted(entity.name)): the store already has a table of that name that Depot did "
            + "not create; rename the entity or the table"
    }
}
