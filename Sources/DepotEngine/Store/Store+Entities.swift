import GRDB

/// Entities created over the API (DESIGN §18) in an SQLite store.
extension Store {
    public nonisolated func putEntity(_ entity: EntitySchema) async throws -> Bool {
        try await checkOpen()
        let before = box.value
        do {
            return try await pool.write { db in
                let schema = self.box.value
                let changed = try SchemaMigrator.put(db, store: schema, entity: entity)
                // Set before the commit, so that the next write on this
                // connection (serialized after this one) sees the entity.
                if let changed { self.box.set(changed) }
                return changed != nil
            }
        } catch {
            box.set(before)
            throw EntityDefinition.refusal(Store.translate(error, store: name), entity: entity.name, store: name)
        }
    }

    /// Brings the store to the configuration's `entities` while it runs
    /// (a reload): as opening it would, in one transaction.
    public nonisolated func reconfigure(entities: [EntitySchema]) async throws {
        try await checkOpen()
        let before = box.value
        do {
            try await pool.write { db in
                let created = try SchemaMigrator.createdEntities(db, store: self.name)
                try EntityDefinition.checkNames(configured: entities, created: created, store: self.name)
                let plans = try SchemaMigrator.migrate(db, store: self.name, entities: entities + created)
                self.box.set(
                    StoreSchema(
                        name: self.name, entities: entities + created,
                        changesPerStatement: self.configuration.changesPerStatement,
                        bulkUpdates: self.configuration.bulkUpdates,
                        createdByAPI: Set(created.map(\.name)), migrations: plans))
            }
        } catch {
            box.set(before)
            throw Store.translate(error, store: name)
        }
    }

    public nonisolated func dropEntity(_ name: String) async throws {
        try await checkOpen()
        let before = box.value
        do {
            try await pool.write { db in
                let schema = self.box.value
                try SchemaMigrator.drop(db, store: schema, entity: name)
                self.box.set(schema.removing(name))
            }
        } catch {
            box.set(before)
            throw Store.translate(error, store: self.name)
        }
    }
}
