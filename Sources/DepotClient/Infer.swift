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
