import Foundation
import GRDB

/// Creates a store's tables or migrates them to the configured schema.
///
/// Runs once, in one transaction, when a store opens, after the engine's own
/// tables are brought up to date (``SystemTables``). Compatible changes are
/// applied in place (a new optional field, an optional field made required
/// when no record holds null in it, added or removed indexes); every
/// incompatible change of every entity is reported at once and nothing is
/// changed.
enum SchemaMigrator {
    typealias Definition = MigrationRules.Definition

    /// - Returns: the migrations to run (their entities are served as the
    ///   store holds them until each one's switch).
    @discardableResult
    static func migrate(_ db: Database, store: String, entities: [EntitySchema]) throws -> [MigrationPlan] {
        try SystemTables.migrate(db, store: store)
        try applyRenames(db, store: store, entities: entities)
        var problems: [String] = []
        var work: [() throws -> Void] = []
        var plans: [MigrationPlan] = []
        var served: [EntitySchema] = []
        for configured in entities {
            var entity = configured
            defer { served.append(entity) }
            let stored = try String.fetchOne(
                db, sql: "SELECT definition FROM depot_schema WHERE entity = ?",
                arguments: [entity.name])
            guard let stored else {
                if try db.tableExists(entity.name) {
                    problems.append(MigrationRules.foreignTable(entity))
                    continue
                }
                work.append { try create(db, entity) }
                continue
            }
            guard let old = try? JSONDecoder().decode(Definition.self, from: Data(stored.utf8)) else {
                problems.append(
                    "entity \(JSONText.quoted(entity.name)): the stored schema is unreadable; "
                        + "the store file may be damaged")
                continue
            }
            var nulls: [String: Int] = [:]
            for name in MigrationRules.fieldsBecomingRequired(entity, stored: old) {
                nulls[name] =
                    try Int.fetchOne(
                        db,
                        sql: "SELECT count(*) FROM \(entity.table) WHERE "
                            + "\(SQL.quote(name)) IS NULL") ?? 0
            }
            let outcome = MigrationRules.check(entity, stored: old, nulls: nulls)
            problems += outcome.problems
            if let plan = MigrationRules.plan(configured, stored: old, outcome, problems: &problems) {
                entity = plan.serving
                plans.append(plan)
            }
            for field in outcome.added {
                work.append {
                    try db.execute(
                        sql: "ALTER TABLE \(entity.table) ADD COLUMN "
                            + "\(SQL.quote(field.name)) \(field.type.sqlType)")
                }
            }
            work.append { [entity] in try syncIndexes(db, entity) }
        }
        problems += MigrationPlan.problems(plans, served: served, store: store, dialect: .sqlite)
        guard problems.isEmpty else {
            throw DepotError(
                .migrationRefused,
                "store \(JSONText.quoted(store)) cannot open with this "
                    + "configuration: " + problems.joined(separator: "; "))
        }
        for step in work { try step() }
        for entity in served { try keep(db, entity) }
        return plans
    }

    /// Keeps `entity`'s definition in `depot_schema`: what the next open checks against.
    static func keep(_ db: Database, _ entity: EntitySchema) throws {
        try db.execute(
            sql: "INSERT INTO depot_schema(entity, definition) VALUES (?, ?) "
                + "ON CONFLICT(entity) DO UPDATE SET definition = excluded.definition",
            arguments: [entity.name, try Definition(entity).json])
    }

    /// Applies the renames `entities` ask for (``RenamePlan``), in the
    /// opening transaction, before the entities are checked.
    static func applyRenames(_ db: Database, store: String, entities: [EntitySchema]) throws {
        guard entities.contains(where: { $0.renamedFrom != nil || !$0.fieldsRenamedFrom.isEmpty }) else { return }
        let definitions = try Row.fetchAll(db, sql: "SELECT entity, definition FROM depot_schema").map {
            (row: Row) -> (String, String) in (row[0], row[1])
        }
        let plan = try RenamePlan.make(entities, definitions: definitions, store: store)
        let now = Timestamp.now()
        for r in plan.entities {
            try db.execute(sql: "ALTER TABLE \(SQL.quote(r.old)) RENAME TO \(SQL.quote(r.new))")
            for table in ["depot_schema", "depot_layouts", "depot_changes", "depot_processors"] {
                try db.execute(sql: "UPDATE \(table) SET entity = ? WHERE entity = ?", arguments: [r.new, r.old])
            }
            try db.execute(
                sql: "INSERT INTO depot_renames(kind, entity, old, new, applied) VALUES ('entity', ?, ?, ?, ?)",
                arguments: [r.new, r.old, r.new, now])
        }
        for r in plan.fields {
            try db.execute(
                sql: "ALTER TABLE \(SQL.quote(r.entity)) RENAME COLUMN \(SQL.quote(r.old)) TO \(SQL.quote(r.new))")
            if let text = try String.fetchOne(
                db, sql: "SELECT definition FROM depot_schema WHERE entity = ?", arguments: [r.entity]),
                let renamed = try RenamePlan.renaming(definition: text, r.old, r.new)
            {
                try db.execute(
                    sql: "UPDATE depot_schema SET definition = ? WHERE entity = ?", arguments: [renamed, r.entity])
            }
            // The history under the new name: the layouts of compact values,
            // the names of an update's fields, the keys of values and tombstones.
            for row in try Row.fetchAll(
                db, sql: "SELECT id, fields FROM depot_layouts WHERE entity = ?", arguments: [r.entity])
            {
                let id: Int64 = row[0]
                let names: String = row[1]
                try db.execute(
                    sql: "UPDATE depot_layouts SET fields = ? WHERE id = ?",
                    arguments: [RenamePlan.renamingName(names, r.old, r.new), id])
            }
            let name = JSONText.quoted(r.old)
            for row in try Row.fetchAll(
                db,
                sql: "SELECT rowid, fields, old, new, tombstone FROM depot_changes WHERE entity = ? "
                    + "AND (instr(fields, ?) > 0 OR instr(old, ?) > 0 OR instr(new, ?) > 0 OR instr(tombstone, ?) > 0)",
                arguments: [r.entity, name, name + ":", name + ":", name + ":"])
            {
                let rowid: Int64 = row[0]
                let fields: String? = row[1]
                let old: String? = row[2]
                let new: String? = row[3]
                let tombstone: String? = row[4]
                try db.execute(
                    sql: "UPDATE depot_changes SET fields = ?, old = ?, new = ?, tombstone = ? WHERE rowid = ?",
                    arguments: [
                        fields.map { RenamePlan.renamingName($0, r.old, r.new) },
                        old.map { RenamePlan.renamingKey($0, r.old, r.new) },
                        new.map { RenamePlan.renamingKey($0, r.old, r.new) },
                        tombstone.map { RenamePlan.renamingKey($0, r.old, r.new) }, rowid
                    ])
            }
            try db.execute(
                sql: "INSERT INTO depot_renames(kind, entity, old, new, applied) VALUES ('field', ?, ?, ?, ?)",
                arguments: [r.entity, r.old, r.new, now])
        }
    }

    /// The entities created over the API that the store keeps (DESIGN §18).
    static func createdEntities(_ db: Database, store: String) throws -> [EntitySchema] {
        try String.fetchAll(db, sql: "SELECT definition FROM depot_entities ORDER BY created, name").map {
            try EntityDefinition.stored($0, store: store)
        }
    }

    /// Creates entity `entity` over the API, or changes the one created so
    /// (as the configuration's change on open: an added optional field, the
    /// indexes); in the caller's transaction.
    ///
    /// - Returns: nil when nothing changed, else the schema with the
    ///   entity (served as the store holds it while a migration waits).
    /// - Throws: ``DepotError/Code/conflict`` for an entity of the
    ///   configuration; ``DepotError/Code/migrationRefused`` for a change
    ///   the store cannot take.
    static func put(_ db: Database, store: StoreSchema, entity: EntitySchema) throws -> StoreSchema? {
        try EntityDefinition.checkPut(entity, in: store)
        let text = EntityDefinition(entity).json
        let stored = try String.fetchOne(
            db, sql: "SELECT definition FROM depot_entities WHERE name = ?", arguments: [entity.name])
        if stored == text { return nil }
        let plans = try migrate(db, store: store.name, entities: [entity])
        try db.execute(
            sql: "INSERT INTO depot_entities(name, definition, created) VALUES (?, ?, ?) "
                + "ON CONFLICT(name) DO UPDATE SET definition = excluded.definition",
            arguments: [entity.name, text, Timestamp.now()])
        return store.replacing(entity, migrating: plans.first)
    }

    /// Drops entity `name`, created over the API and holding no record.
    static func drop(_ db: Database, store: StoreSchema, entity name: String) throws {
        let entity = try EntityDefinition.checkDrop(name, in: store)
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(entity.table)") ?? 0
        try EntityDefinition.checkEmpty(entity, count: count)
        try db.execute(sql: "DROP TABLE \(entity.table)")
        try db.execute(sql: "DELETE FROM depot_schema WHERE entity = ?", arguments: [name])
        try db.execute(sql: "DELETE FROM depot_entities WHERE name = ?", arguments: [name])
    }

    /// Creates `entity`'s table (named `table`, the entity's by default).
    static func create(_ db: Database, _ entity: EntitySchema, table: String? = nil) throws {
        var columns: [String] = []
        for field in entity.fields {
            var column = "\(SQL.quote(field.name)) \(field.type.sqlType)"
            if entity.identifier.contains(field.name) {
                column += " NOT NULL"
                if entity.identifier.count == 1 { column += " UNIQUE" }
            }
            columns.append(column)
        }
        // The token of the record's last change (SystemTables version 5).
        columns.append("depot_token INTEGER")
        if entity.identifier.count > 1 {
            columns.append("UNIQUE(" + entity.identifier.map(SQL.quote).joined(separator: ", ") + ")")
        }
        try db.execute(
            sql: "CREATE TABLE \(table.map(SQL.quote) ?? entity.table) (\(columns.joined(separator: ", "))) STRICT")
        if table == nil { try syncIndexes(db, entity) }
    }

    static func indexName(_ entity: EntitySchema, _ fields: [String]) -> String {
        "depot_idx_\(entity.name)(\(fields.joined(separator: ",")))"
    }

    static func syncIndexes(_ db: Database, _ entity: EntitySchema) throws {
        let wanted = Dictionary(entity.indexes.map { (indexName(entity, $0), $0) }, uniquingKeysWith: { a, _ in a })
        let existing = try String.fetchAll(
            db,
            sql: "SELECT name FROM sqlite_master WHERE type = 'index' "
                + "AND tbl_name = ? AND name LIKE 'depot_idx_%'", arguments: [entity.name])
        for name in existing where wanted[name] == nil {
            try db.execute(sql: "DROP INDEX \(SQL.quote(name))")
        }
        for (name, fields) in wanted where !existing.contains(name) {
            try db.execute(
                sql: "CREATE INDEX \(SQL.quote(name)) ON \(entity.table)("
                    + fields.map(SQL.quote).joined(separator: ", ") + ")")
        }
    }
}
