import Synchronization

/// A store's name and its entities, looked up by name.
package struct StoreSchema: Sendable {
    package let name: String
    package let entities: [EntitySchema]
    private let byName: [String: EntitySchema]
    /// See ``StoreConfiguration/changesPerStatement``.
    let changesPerStatement: Int
    /// See ``StoreConfiguration/bulkUpdates``.
    let bulkUpdates: Bool
    /// The entities created over the API (DESIGN §18), not in the configuration.
    package let createdByAPI: Set<String>
    /// The migrations waiting for their switch (DESIGN §18), by entity:
    /// ``entities`` holds each one's ``MigrationPlan/serving`` until then.
    package let migrations: [String: MigrationPlan]

    package init(
        name: String, entities: [EntitySchema], changesPerStatement: Int = 64, bulkUpdates: Bool = true,
        createdByAPI: Set<String> = [], migrations: [MigrationPlan] = []
    ) {
        self.name = name
        self.bulkUpdates = bulkUpdates
        self.changesPerStatement = max(1, min(changesPerStatement, 3_000))
        self.createdByAPI = createdByAPI
        let plans = Dictionary(migrations.map { ($0.target.name, $0) }, uniquingKeysWith: { _, b in b })
        self.migrations = plans
        self.entities = entities.map { plans[$0.name]?.serving ?? $0 }
        self.byName = Dictionary(self.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The entities of the configuration, as configured (a migrating one's target).
    package var configured: [EntitySchema] {
        entities.filter { !createdByAPI.contains($0.name) }.map { migrations[$0.name]?.target ?? $0 }
    }

    /// The schema once the migration of `target`'s entity switched: the entity as configured.
    package func switched(to target: EntitySchema) -> StoreSchema {
        StoreSchema(
            name: name, entities: entities.map { $0.name == target.name ? target : $0 },
            changesPerStatement: changesPerStatement, bulkUpdates: bulkUpdates, createdByAPI: createdByAPI,
            migrations: migrations.values.filter { $0.target.name != target.name })
    }

    /// The schema with `entity` (created over the API) added, or put in
    /// place of the one of its name; served as `plan` says while it migrates.
    package func replacing(_ entity: EntitySchema, migrating plan: MigrationPlan? = nil) -> StoreSchema {
        var all = entities
        if let i = all.firstIndex(where: { $0.name == entity.name }) { all[i] = entity } else { all.append(entity) }
        return StoreSchema(
            name: name, entities: all, changesPerStatement: changesPerStatement,
            createdByAPI: createdByAPI.union([entity.name]),
            migrations: migrations.values.filter { $0.target.name != entity.name } + (plan.map { [$0] } ?? []))
    }

    /// The schema without entity `name`.
    package func removing(_ name: String) -> StoreSchema {
        StoreSchema(
            name: self.name, entities: entities.filter { $0.name != name }, changesPerStatement: changesPerStatement,
            createdByAPI: createdByAPI.subtracting([name]),
            migrations: migrations.values.filter { $0.target.name != name })
    }

    /// The entity called `name`.
    ///
    /// - Throws: ``DepotError/Code/unknownEntity`` with the closest name as a hint.
    package func entity(_ name: String) throws -> EntitySchema {
        guard let e = byName[name] else {
            throw DepotError(
                .unknownEntity,
                "store \(JSONText.quoted(self.name)) has no entity "
                    + "\(JSONText.quoted(name))" + DepotError.suggestion(for: name, in: entities.map(\.name)))
        }
        return e
    }
}

/// A store's schema, which entities created or dropped over the API change
/// while it runs: every read and save takes the current one.
public final class SchemaBox: Sendable {
    private let current: Mutex<StoreSchema>

    package init(_ schema: StoreSchema) { current = Mutex(schema) }

    package var value: StoreSchema { current.withLock { $0 } }

    package func set(_ schema: StoreSchema) { current.withLock { $0 = schema } }

    /// Changes the schema from what it is at this moment, in one step: two
    /// changes that each read it and then set it could lose one.
    package func update(_ change: (StoreSchema) -> StoreSchema) { current.withLock { $0 = change($0) } }
}
