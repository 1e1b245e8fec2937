import DepotEngine
import DepotWire
import Foundation
import Hummingbird

/// Entities created over the API (DESIGN §18): kept in the store, listed
/// with `"declared": "api"`.
extension ControlRoutes {
    /// `PUT /v1/stores/{store}/entities/{entity}`: creates the entity (`201`)
    /// or changes the one created so as a configuration's entity changes
    /// when its store opens (`200`; `200` too when it is as given already).
    /// Answers the entity as `GET /v1/stores/{store}` lists it.
    func putEntity(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let name = context.parameters.get("entity") ?? ""
        let bytes = try await JSONBody.read(request, limit: config.maxRequestBytes)
        let entity = try EntityDefinition(json: Array(bytes), name: name).schema()
        let existed = store.reads.entities.contains { $0.name == name }
        // A change a convert explains starts its migrate job (DESIGN §18).
        if try await store.putEntity(entity) { await jobs.startMigrations(of: store) }
        let info = try await describe(store).entities.first { $0.name == name }
        return try JSONResponse.encode(info, status: existed ? .ok : .created)
    }

    /// `DELETE /v1/stores/{store}/entities/{entity}`: drops an entity
    /// created over the API that holds no record (`204`).
    ///
    /// Refused (`409 conflict`) while a job that is not over works on the
    /// entity, or a processor names it (issue 51: the job failed on a table
    /// gone under it; the processors stayed listed, also after a restart).
    func dropEntity(_ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let entity = context.parameters.get("entity") ?? ""
        let quoted = JSONText.quoted(entity)
        if let job = await jobs.all().first(where: {
            $0.store == store.name && $0.entity == entity && !$0.state.isFinal
        }) {
            throw APIError(
                .conflict,
                "job \(job.id) (\(job.kind.rawValue), \(job.state.rawValue)) works on entity \(quoted): "
                    + "wait for it to end or cancel it (depotctl cancel \(job.id)), then drop the entity")
        }
        if let processor = try await store.reads.processors().first(where: { $0.entity == entity }) {
            throw APIError(
                .conflict,
                "processor \(JSONText.quoted(processor.name)) reads entity \(quoted): drop it first "
                    + "(DELETE /v1/stores/\(store.name)/processors/\(processor.name))")
        }
        try await store.dropEntity(entity)
        return Response(status: .noContent)
    }
}
