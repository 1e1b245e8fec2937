import DepotEngine
import DepotWire
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import DepotDaemon

/// The control API's routes answered in process (issue 52, item 6):
/// Hummingbird's router test framework drives the daemon's own router,
/// middleware and stores, with no process, socket or HTTP parser between.
/// Each documented error code a route gives (docs/api.md's table) is asked
/// for once; the codes only a process can give (a closed store, too many
/// connections, a full disk, I/O) stay with the process tests.
@Suite("Routes in process: each documented error answer, its status and code")
struct RouteAnswerTests {
    /// A daemon's runtime on a fresh folder (the tests' configuration), its
    /// router under the router test framework.
    static func withRouter(
        _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("routes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("inbox"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = try DaemonConfig.parse(
            DaemonProcess.config().replacingOccurrences(
                of: "[daemon]\n", with: "[daemon]\nmax_request_bytes = 65536\n"),
            file: folder.appendingPathComponent("depot.toml").path)
        var logger = Logger(label: "routes")
        logger.logLevel = .critical
        let runtime = try await DaemonRuntime.start(config: config, metrics: Metrics(), logger: logger)
        let routes = ControlRoutes(
            settings: runtime.settings, jobs: runtime.jobs, metrics: runtime.metrics, logger: logger,
            watcher: runtime.watcher)
        do {
            try await Application(router: routes.router()).test(.router, body)
        } catch {
            await runtime.jobs.shutdown()
            throw error
        }
        await runtime.jobs.shutdown()
    }

    /// One request: its status, its error's code (nil for a success), and its headers.
    struct Answer {
        var status: Int
        var code: String?
        var headers: HTTPFields
        var body: String
    }

    static func ask(
        _ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, _ body: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> Answer {
        try await client.execute(
            uri: "/v1" + path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }
        ) { response in
            let text = String(buffer: response.body)
            let error = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["error"]
            return Answer(
                status: Int(response.status.code), code: (error as? [String: Any])?["code"] as? String,
                headers: response.headers, body: text)
        }
    }

    @Test("every 400, 403, 404, 405, 409, 410, 413 and 422 a route documents, with its code")
    func errorAnswers() async throws {
        try await Self.withRouter { client in
            func expect(
                _ method: HTTPRequest.Method, _ path: String, _ body: String?, headers: HTTPFields = [:],
                _ status: Int, _ code: String?, sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                let answer = try await Self.ask(client, method, path, body, headers: headers)
                #expect(
                    answer.status == status && answer.code == code,
                    "\(method) \(path): \(answer.status) \(answer.body)", sourceLocation: sourceLocation)
            }
            let fetch = "/stores/travel/entities/Trip/fetch"
            let trip =
                #"{"id":"T1","name":"Fjords","startDate":"2025-06-01","budget":1e308,"isFavorite":false}"#
            let second =
                #"{"id":"T2","name":"Nile","startDate":"2025-06-01","budget":1e308,"isFavorite":false}"#
            try await expect(
                .post, "/stores/travel/save",
                #"{"changes":[{"insert":"Trip","record":\#(trip)},{"insert":"Trip","record":\#(second)}]}"#, 200, nil)
            // 400s.
            try await expect(.post, fetch, #"{"limit":-1}"#, 400, "invalid_argument")
            try await expect(.post, fetch, "{not json", 400, "invalid_argument")
            try await expect(.post, fetch, #"{"where":"name =="}"#, 400, "invalid_predicate")
            try await expect(.post, fetch, #"{"fields":["nmae"]}"#, 400, "unknown_field")
            try await expect(.post, fetch, #"{"where":"budget == 'cheap'"}"#, 400, "type_mismatch")
            try await expect(.get, "/stores/travel/history?after=999999", nil, 400, "invalid_token")
            try await expect(
                .put, "/stores/travel/entities/Codes", #"{"identifier":["code"],"fields":{"code":"strng"}}"#, 400,
                "invalid_schema")
            // 403: a path outside import_roots.
            try await expect(
                .post, "/jobs", #"{"kind":"import","store":"travel","entity":"Trip","path":"/etc/passwd"}"#, 403,
                "forbidden")
            // 403, not 409, for a backup onto a file that exists where the
            // daemon may not write: a conflict there would tell which files
            // exist (CI's API fuzzing asked for the store's own file).
            try await expect(
                .post, "/jobs", #"{"kind":"backup","store":"travel","path":"/etc/passwd"}"#, 403, "forbidden")
            // 404s.
            try await expect(.get, "/nowhere", nil, 404, "not_found")
            try await expect(.get, "/stores/atlas", nil, 404, "unknown_store")
            try await expect(.post, "/stores/travel/entities/Ship/fetch", "{}", 404, "unknown_entity")
            try await expect(.get, "/jobs/j000000000000", nil, 404, "unknown_job")
            try await expect(.delete, "/stores/travel/consumers/nobody", nil, 404, "unknown_consumer")
            try await expect(.post, "/stores/travel/processors/nobody/next", nil, 404, "unknown_processor")
            try await expect(
                .post, "/stores/travel/processors/nobody/commit", #"{"lease":"0-ab"}"#, 404, "unknown_processor")
            // 405, with the methods the path takes.
            let wrong = try await Self.ask(client, .delete, "/health")
            #expect(wrong.status == 405 && wrong.code == "method_not_allowed", "\(wrong.body)")
            #expect(wrong.headers[.allow]?.contains("GET") == true, "\(wrong.headers)")
            // 409s.
            try await expect(.post, "/stores/travel/consumers", #"{"name":"indexer","from":"now"}"#, 201, nil)
            try await expect(.post, "/stores/travel/consumers", #"{"name":"indexer","from":"now"}"#, 409, "conflict")
            try await expect(
                .post, "/stores/travel/save", #"{"changes":[{"insert":"Trip","record":\#(trip)}]}"#,
                409, "save_refused")
            let read = try await Self.ask(client, .get, "/stores/travel/entities/Trip/records/T1")
            let etag = try #require(read.headers[.eTag])
            try await expect(.patch, "/stores/travel/entities/Trip/records/T1", #"{"name":"Mine"}"#, 200, nil)
            try await expect(
                .patch, "/stores/travel/entities/Trip/records/T1", #"{"name":"Yours"}"#, headers: [.ifMatch: etag],
                409, "conflict")
            // 413.
            try await expect(
                .post, fetch, "{\"where\":\"" + String(repeating: "x", count: 70_000) + "\"}", 413, "too_large")
            // 422s.
            try await expect(
                .post, "/stores/travel/save", #"{"changes":[{"insert":"Trip","record":{"id":"T3"}}]}"#,
                422, "invalid_change")
            try await expect(
                .post, "/stores/travel/save",
                #"{"idempotency_key":"k1","changes":[{"delete":"Trip","identifier":"T2"}]}"#,
                200, nil)
            try await expect(
                .post, "/stores/travel/save",
                #"{"idempotency_key":"k1","changes":[{"delete":"Trip","identifier":"T1"}]}"#,
                422, "idempotency_key_reused")
            try await expect(
                .post, "/stores/travel/save", #"{"changes":[{"insert":"Trip","record":\#(second)}]}"#,
                200, nil)
            try await expect(
                .post, "/stores/travel/entities/Trip/aggregate", #"{"field":"budget","functions":["sum"]}"#, 422,
                "out_of_range")
            // 410: the history before the last token pruned.
            try await expect(.delete, "/stores/travel/history?older_than=0s", nil, 200, nil)
            try await expect(.get, "/stores/travel/history?after=0", nil, 410, "history_expired")
        }
    }
}
