import DepotEngine
import DepotWire
import Dispatch
import Foundation
import Hummingbird

/// `POST /v1/infer` (DESIGN §18): the file as the body, the entity that
/// holds it as the answer.
extension ControlRoutes {
    /// Spools the body, infers over the whole of it (``infer(path:options:)``),
    /// and answers the document of ``Inference/json()`` with
    /// its TOML beside it (`"toml"`). Query: `entity` (the entity's name),
    /// `name` (the file's name, for its format and a default entity name),
    /// `format` (`auto`, `csv`, `tsv`, `ndjson`, `json`).
    func infer(_ request: Request, _ context: DepotRequestContext) async throws -> Response {
        let q = request.uri.queryParameters
        var options = InferOptions()
        options.entity = q.get("entity").map { String($0) }
        options.fileName = q.get("name").map { String($0) } ?? "data"
        if let format = q.get("format") {
            options.format = try JobSetting.read("format", String(format), JobSetting.importFormat)
        }
        if let entity = options.entity, entity.isEmpty || entity.utf8.contains(0) {
            throw APIError(.invalidArgument, "entity must be a name")
        }
        let spool = config.stateDir + "/spool"
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        let path = "\(spool)/infer-\(UUID().uuidString)"
        try await self.spool(request.body, to: path)
        defer { unlink(path) }
        options.temporaryFolder = spool
        let inference = try await Self.infer(path: path, options: options)
        var buffer = ByteBuffer()
        buffer.writeString(inference.json(toml: true) + "\n")
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }

    /// Infers the file at `path` on a thread of its own: the work reads the
    /// whole file, once or more, and must not hold one of the server's few.
    static func infer(path: String, options: InferOptions) async throws -> Inference {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                continuation.resume(with: Result { try SchemaInference.infer(path: path, options: options) })
            }
        }
    }
}
