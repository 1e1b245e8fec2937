import GRDB

/// Entities created over the API (DESIGN §18) in an SQLite store.
extension Store {
    public nonisolated func putEntity(_ entity: EntitySchema) async throws -> Bool {
        try await checkOpen()
        do {
            return try await changeSchema { db, schema in try SchemaMigrator.put(db, store: schema, entity: entity) }
        } catch {
            throw EntityDefinition.refusal(Store.translate(error, store: name), entity: entity.name, store: name)
        }
    }

    /// Runs a change of the schema in a transaction of the writer: `body`
    /// gets the schema as the writer sees it and returns the new one (nil:
    /// nothing changed). The new schema is served from before the commit,
    /// so that the next write (serialized after this one) sees it; if the
    /// transaction fails, even at its commit, the schema it was given is
    /// put back while the writer is still held. Issue 51: the schema was
    /// copied before waiting for the writer and that stale copy put back
    /// on a refusal, so a refused drop rolled an entity that another
    /// request had created meanwhile out of the running daemon.
    ///
    /// - Returns: whether the schema changed.
    nonisolated func changeSchema(_ body: @escaping @Sendable (Database, StoreSchema) throws -> StoreSchema?)
        async throws -> Bool
    {
        try await pool.writeWithoutTransaction { db in
            let schema = self.box.value
            var changed = false
            do {
                try db.inTransaction(.immediate) {
                    if let next = try body(db, schema) {
                        self.box.set(next)
                        changed = true
                    }
                    return .commit
                }
            } catch {
                self.box.set(schema)
                throw error
            }
            return changed
        }
    }

    /// Brings the store to the configuration's `entities` while it runs
    /// (a reload): as opening it would, in one transaction.
    public nonisolated func reconfigure(entities: [EntitySchema]) async throws {
        try await checkOpen()
        do {
            _ = try await changeSchema { db, _ in
                let created = try SchemaMigrator.createdEntities(db, store: self.name)
                try EntityDefinition.checkNames(configured: entities, created: created, store: self.name)
                let plans = try SchemaMigrator.migrate(db, store: self.name, entities: entities + created)
                return StoreSchema(
                    name: self.name, entities: entities + created,
                    changesPerStatement: self.configuration.changesPerStatement,
                    bulkUpdates: self.configuration.bulkUpdates,
                    createdByAPI: Set(created.map(\.name)), migrations: plans)
            }
        } catch {
            throw Store.translate(error, store: name)
        }
    }

    public nonisolated func dropEntity(_ name: String) async throws {
        try await checkOpen()
        do {
            _ = try await changeSchema { db, schema in
                try SchemaMigrator.drop(db, store: schema, entity: name)
                return schema.removing(name)
            }
        } catch {
            throw Store.translate(error, store: self.name)
        }
        // Live reads of the entity wake, see it gone and end.
        signal.bump()
    }
}
