import Foundation
import NIOHTTP1

extension DepotClient {
    /// Sends a CSV, TSV, NDJSON or JSON file to the daemon, which reads it
    /// whole and answers the entity its records fit (DESIGN §18): dialect,
    /// types with their evidence, nulls, identifier candidates, and the
    /// `[[store.entity]]` to paste (``InferAnswer/toml``). Needs the `read` role.
    ///
    /// ```swift
    /// let found = try await client.infer(file: "bookings.csv", entity: "Booking")
    /// print(found.entity.identifier, found.toml)
    /// ```
    public func infer(file path: String, entity: String? = nil, format: String? = nil) async throws -> InferAnswer {
        var query = ["name=\(Self.escaped((path as NSString).lastPathComponent))"]
        if let entity { query.append("entity=\(Self.escaped(entity))") }
        if let format { query.append("format=\(Self.escaped(format))") }
        let target = "/v1/infer?" + query.joined(separator: "&")
        return try Self.decode(
            InferAnswer.self,
            try await call(.POST, target, body: .file(path: path, contentType: "application/octet-stream")),
            answering: "POST /v1/infer")
    }
}

extension DepotClient {
    /// Creates an entity over the API (DESIGN §18), kept in the store and
    /// listed with `declared == "api"`; or changes one created so (an added
    /// optional field, the indexes). `definition` is the entity as JSON:
    /// `{"identifier": "id", "fields": {"id": "string", "n": "int?"}, "indexes": [["n"]]}`
    /// (fields stored in the order given). Needs the `write` role.
    ///
    /// ```swift
    /// let codes = try await client.putEntity(
    ///     "Codes", store: "travel", definition: #"{"identifier": "code", "fields": {"code": "string"}}"#)
    /// ```
    public func putEntity(_ name: String, store: String, definition: String) async throws -> EntityInfo {
        let path = "/v1/stores/\(Self.escaped(store))/entities/\(Self.escaped(name))"
        return try Self.decode(
            EntityInfo.self,
            try await call(.PUT, path, body: .bytes(Array(definition.utf8), contentType: "application/json")),
            answering: "PUT \(path)")
    }

    /// Drops an entity created over the API that holds no record.
    ///
    /// ```swift
    /// try await client.dropEntity("Codes", store: "travel")
    /// ```
    public func dropEntity(_ name: String, store: String) async throws {
        _ = try await call(.DELETE, "/v1/stores/\(Self.escaped(store))/entities/\(Self.escaped(name))")
    }
}

extension DepotClient {
    /// Migrates a store to the entities its configuration file declares
    /// now (DESIGN §18). With `dryRun`, changes nothing and answers each
    /// entity's changes and every record whose conversion would fail;
    /// without, brings the store to the file (as a reload does) and answers
    /// the `migrate` jobs queued or running. Needs the `write` role.
    ///
    /// ```swift
    /// let plan = try await client.migrate(store: "travel", dryRun: true)
    /// print(plan.entities.map { "\($0.entity): \($0.rejected) rejected" })
    /// ```
    public func migrate(store: String, entity: String? = nil, dryRun: Bool) async throws -> MigrationAnswer {
        struct Body: Encodable {
            var entity: String?
            var dry_run: Bool
        }
        let path = "/v1/stores/\(Self.escaped(store))/migrate"
        let body = try JSONEncoder().encode(Body(entity: entity, dry_run: dryRun))
        return try Self.decode(
            MigrationAnswer.self,
            try await call(.POST, path, body: .bytes(Array(body), contentType: "application/json")),
            answering: "POST \(path)")
    }
}
