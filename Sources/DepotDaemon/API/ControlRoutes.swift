import DepotEngine
import DepotWire
import Foundation
import HTTPTypes
package import Hummingbird
package import Logging
import NIOCore

/// The control API of DESIGN §5, under `/v1`.
package struct ControlRoutes: Sendable {
    /// The configuration now: a reload replaces it (``LiveSettings``).
    let settings: LiveSettings
    let jobs: JobManager
    let metrics: Metrics
    let logger: Logger
    let watcher: FolderWatcher?
    /// First results of live fetches, shared by streams opened together.
    let liveStarts = LiveStarts()
    /// The entities' counts of `GET /v1/stores`, kept until the next commit.
    let entityCounts = EntityCounts()

    package init(
        settings: LiveSettings, jobs: JobManager, metrics: Metrics, logger: Logger, watcher: FolderWatcher? = nil
    ) {
        self.settings = settings
        self.jobs = jobs
        self.watcher = watcher
        self.metrics = metrics
        self.logger = logger
    }

    /// The configuration as the last reload left it.
    var config: DaemonConfig { settings.current }

    /// The write deadline of a streamed answer on this request's connection.
    func deadline(_ context: some ConnectionContext) -> StreamDeadline {
        StreamDeadline(context, timeout: config.streamWriteTimeout, metrics: metrics, logger: logger)
    }

    static func files(in folder: String, excluding suffix: String? = nil) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { name in !name.hasPrefix(".") && !(suffix.map(name.hasSuffix) ?? false) }.count
    }

    /// What an export job wrote, streamed from its file.
    func output(_ record: JobRecord, _ context: DepotRequestContext) async throws -> Response {
        guard record.kind == .export else {
            throw APIError(.conflict, "job \(record.id) is a \(record.kind.rawValue) job; only export jobs have output")
        }
        guard record.state == .succeeded, let path = record.path else {
            throw APIError(
                .conflict, "job \(record.id) is \(record.state.rawValue); its output is there once it succeeded")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            logger.error(
                "an export's output cannot be read",
                metadata: [
                    LogKey.jobID: "\(record.id)", LogKey.path: "\(path)",
                    LogKey.error: "\(String(cString: strerror(errno)))"
                ])
            throw APIError(.io, "the output of job \(record.id) cannot be read; see the daemon's log")
        }
        let type = if case .export(_, _, .csv, _, _) = record.spec { "text/csv" } else { "application/x-ndjson" }
        return fileResponse(fd, contentType: type, context) { errno in
            logger.error(
                "an export's output cannot be read",
                metadata: [
                    LogKey.jobID: "\(record.id)", LogKey.path: "\(path)",
                    LogKey.error: "\(String(cString: strerror(errno)))"
                ])
            return APIError(.io, "the output of job \(record.id) cannot be read; see the daemon's log")
        }
    }

    /// The file open at `fd` (closed at the end), streamed a megabyte at a
    /// time, read straight into the buffer that is sent, each write under the
    /// stream's deadline. A failed read ends the response unfinished (with
    /// `failure`'s error), so that the client sees a broken transfer, not a
    /// short file.
    func fileResponse(
        _ fd: Int32, contentType: String, _ context: some ConnectionContext,
        failure: @escaping @Sendable (Int32) -> APIError
    ) -> Response {
        let deadline = deadline(context)
        return Response(
            status: .ok, headers: [.contentType: contentType],
            body: ResponseBody { base in
                defer { close(fd) }
                var writer = deadline.writer(base)
                while true {
                    var buffer = ByteBufferAllocator().buffer(capacity: 1 << 20)
                    var error: Int32 = 0
                    let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 20) { bytes in
                        var n: Int
                        repeat { n = read(fd, bytes.baseAddress, bytes.count) } while n < 0 && errno == EINTR
                        if n < 0 { error = errno }
                        return max(n, 0)
                    }
                    if error != 0 { throw failure(error) }
                    if n == 0 { break }
                    try await writer.write(buffer)
                }
                try await writer.finish(nil)
            })
    }

    /// A line of a stream: `value` as JSON.
    static func line(_ value: some Encodable) -> String {
        (try? String(decoding: JSONResponse.encoder.encode(value), as: UTF8.self)) ?? "{}"
    }

    func job(_ context: DepotRequestContext) async throws -> JobRecord {
        let id = context.parameters.get("id") ?? ""
        if let record = await jobs.job(id) { return record }
        // A job another host of a shared store runs (issue #35: it was
        // unknown here while it ran).
        for store in jobs.stores.shared {
            if let record = try await store.jobs.record(id) { return record }
        }
        throw APIError(.unknownJob, "no job has id \(JSONText.quoted(id))")
    }

    func describe(_ store: any StoreBackend) async throws -> StoreInfo {
        var entities: [EntityInfo] = []
        for e in store.reads.entities {
            let count = try await entityCounts.count(e.name, in: store)
            let relationships = e.relationships.map { r in
                switch r.kind {
                case .toOne(let required):
                    EntityInfo.Relationship(
                        name: r.name, to: r.target, kind: "to-one", required: required,
                        columns: e.relationshipColumns[r.name] ?? [])
                case .toMany(let inverse, let rule):
                    EntityInfo.Relationship(
                        name: r.name, to: r.target, kind: "to-many", inverse: inverse, delete: rule.rawValue)
                }
            }
            entities.append(
                EntityInfo(
                    name: e.name, count: count, identifier: e.identifier, indexes: e.indexes,
                    fields: e.fields.map { EntityInfo.Field(name: $0.name, type: $0.declaration) },
                    relationships: relationships,
                    declared: store.reads.entitiesCreatedByAPI.contains(e.name) ? "api" : "config",
                    history: e.history.rawValue))
        }
        return StoreInfo(
            name: store.name, path: store.location, token: try await store.reads.latestToken()?.description,
            entities: entities)
    }
}
