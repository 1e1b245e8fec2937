import DepotEngine
import DepotWire
import Foundation
import Hummingbird
import Logging

/// Schema changes as jobs (DESIGN §18): `depotctl migrate`.
extension ControlRoutes {
    struct MigrateBody: Decodable {
        var dryRun: Bool?
        var entity: String?

        enum CodingKeys: String, CodingKey {
            case entity
            case dryRun = "dry_run"
        }
    }

    /// `POST /v1/stores/{store}/migrate`: reads the configuration file
    /// again and, with `"dry_run": true`, answers what it would migrate in
    /// this store and every record whose conversion would fail, changing
    /// nothing; without, brings the store to it (as a reload does) and
    /// answers the `migrate` jobs queued or running (`202`).
    func migrate(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(MigrateBody.self, from: request, limit: config.maxRequestBytes)
        let configured = try freshEntities(of: store.name)
        if body.dryRun ?? false {
            var entities: [MigrationAnswer.Entity] = []
            let schema = store.settings.schema
            // A rename the next open applies is not looked past (nor a new entity).
            var targets = configured.filter { !MigrationPlan.renamesPending($0, in: schema) }
            // Entities created over the API migrate from their own PUT.
            targets += schema.migrations.values.map(\.target).filter { schema.createdByAPI.contains($0.name) }
            for target in targets where body.entity == nil || body.entity == target.name {
                let pending = schema.migrations[target.name]
                let preview = try await store.migrationPreview(
                    entity: target.name, target: pending?.target == target ? nil : target)
                if preview.changes.isEmpty { continue }
                entities.append(Self.answer(preview))
            }
            return try JSONResponse.encode(
                MigrationAnswer(store: store.name, dryRun: true, entities: entities, jobs: []))
        }
        try await jobs.reconfigure(store, entities: configured)
        let running = await jobs.migrating(store.name).map(\.wire)
        return try JSONResponse.encode(
            MigrationAnswer(store: store.name, dryRun: false, entities: [], jobs: running), status: .accepted)
    }

    /// The entities the configuration file declares for store `name` now.
    private func freshEntities(of name: String) throws -> [EntitySchema] {
        let file = config.file
        let fresh: DaemonConfig
        do {
            fresh = try DaemonConfig.load(path: file)
        } catch let problems as DaemonConfig.Problems {
            throw DepotError(.invalidArgument, "the configuration has errors: \(problems.description)")
        }
        guard let store = fresh.stores.first(where: { $0.name == name }) else {
            throw DepotError(
                .conflict, "store \(JSONText.quoted(name)) is no longer in \(file); it is served until a restart")
        }
        return store.entities
    }

    static func answer(_ preview: MigrationPreview) -> MigrationAnswer.Entity {
        MigrationAnswer.Entity(
            entity: preview.entity,
            changes: preview.changes.map {
                MigrationAnswer.Change(field: $0.field, from: $0.from, to: $0.to, convert: $0.convert)
            }, records: preview.records, rejected: preview.rejects.count, fails: preview.fails,
            rejects: preview.rejects.map {
                MigrationAnswer.Reject(
                    identifier: JSONValue($0.identifier), field: $0.field, reason: $0.reason,
                    value: JSONValue($0.value))
            })
    }
}
