import Foundation

/// The renames a store applies when it opens (`renamed_from`, DESIGN §18),
/// decided the same way on both backends from what the store holds: an
/// entity or a field held under its old name (and not under its new one) is
/// renamed in place, once; held under its new name, nothing is left to do;
/// held under both, the rename is refused. What is renamed: the table or
/// column, the stored definition, and the history, so that it reads under
/// the new name (a change's entity, the names of the fields it changed, the
/// keys of its values and tombstone, the layouts of its compact values).
/// Each rename applied is recorded in `depot_renames`.
package struct RenamePlan: Sendable {
    package struct EntityRename: Sendable, Equatable {
        package var old: String
        package var new: String
    }

    package struct FieldRename: Sendable, Equatable {
        package var entity: String
        package var old: String
        package var new: String
    }

    package var entities: [EntityRename] = []
    package var fields: [FieldRename] = []
    package var problems: [String] = []

    package var isEmpty: Bool { entities.isEmpty && fields.isEmpty }

    /// The plan for `entities`, given the stored definitions (entity →
    /// `depot_schema`'s JSON); its problems refuse the store's opening.
    package static func make(_ entities: [EntitySchema], definitions: [(String, String)], store: String) throws
        -> RenamePlan
    {
        var stored: [String: [String]] = [:]
        for (name, text) in definitions {
            if let d = try? JSONDecoder().decode(MigrationRules.Definition.self, from: Data(text.utf8)) {
                stored[name] = d.fields.map(\.name)
            }
        }
        let plan = RenamePlan(entities, stored: stored)
        guard plan.problems.isEmpty else {
            throw DepotError(
                .migrationRefused,
                "store \(JSONText.quoted(store)) cannot open with this configuration: "
                    + plan.problems.joined(separator: "; "))
        }
        return plan
    }

    /// A stored definition (`depot_schema`'s JSON) with field `old` as `new`.
    package static func renaming(definition text: String, _ old: String, _ new: String) throws -> String? {
        guard var d = try? JSONDecoder().decode(MigrationRules.Definition.self, from: Data(text.utf8)) else {
            return nil
        }
        d.fields = d.fields.map { $0.name == old ? Field(name: new, type: $0.type, isOptional: $0.isOptional) : $0 }
        d.identifier = d.identifier.map { $0 == old ? new : $0 }
        return String(decoding: try JSONEncoder().encode(d), as: UTF8.self)
    }

    /// The plan for `entities`, given the entities the store holds (by name)
    /// and the fields each holds.
    package init(_ entities: [EntitySchema], stored: [String: [String]]) {
        for entity in entities {
            var held = stored[entity.name]
            if let old = entity.renamedFrom, old != entity.name {
                switch (stored[old] != nil, held != nil) {
                case (true, false):
                    self.entities.append(EntityRename(old: old, new: entity.name))
                    held = stored[old]
                case (true, true):
                    problems.append(
                        "entity \(JSONText.quoted(entity.name)) is renamed_from \(JSONText.quoted(old)), but the "
                            + "store holds both; drop one of them, or remove renamed_from")
                default:
                    break
                }
            }
            guard let held else { continue }
            for (new, old) in entity.fieldsRenamedFrom.sorted(by: { $0.key < $1.key }) where old != new {
                switch (held.contains(old), held.contains(new)) {
                case (true, false):
                    fields.append(FieldRename(entity: entity.name, old: old, new: new))
                case (true, true):
                    problems.append(
                        "entity \(JSONText.quoted(entity.name)), field \(JSONText.quoted(new)): renamed_from "
                            + "\(JSONText.quoted(old)), but the store holds both fields; a rename cannot land on an "
                            + "existing field")
                default:
                    break
                }
            }
        }
    }

    /// `text` (a JSON array of field names, or a JSON object's text) with
    /// the name `old` as `new`: an element `"old"` of an array of names, or
    /// a key `"old":` of an object. A quoted name followed by `:` can only be
    /// a key, outside any string (inside one its quotes are escaped).
    package static func renamingKey(_ text: String, _ old: String, _ new: String) -> String {
        text.replacingOccurrences(of: JSONText.quoted(old) + ":", with: JSONText.quoted(new) + ":")
    }

    /// A JSON array of names with `old` as `new`.
    package static func renamingName(_ names: String, _ old: String, _ new: String) -> String {
        guard case .array(let values)? = MiniJSON.parse(names) else { return names }
        let renamed = values.map { v -> String in
            if case .string(let s) = v { return s == old ? new : s }
            return ""
        }
        return JSONText.array(renamed)
    }
}
