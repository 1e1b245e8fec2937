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

    func store(_ context: DepotRequestContext) async throws -> any StoreBackend {
        try jobs.stores.require(context.parameters.get("store") ?? "")
    }

    /// The write deadline of a streamed answer on this request's connection.
    func deadline(_ context: DepotRequestContext) -> StreamDeadline {
        StreamDeadline(context, timeout: config.streamWriteTimeout, metrics: metrics, logger: logger)
    }

    package func router() -> Router<DepotRequestContext> {
        let router = Router(context: DepotRequestContext.self)
        router.middlewares.add(APIMiddleware(metrics: metrics, logger: logger))
        router.middlewares.add(RoleMiddleware(settings: settings))
        let v1 = router.group("v1")
        // Each path with the methods it answers; any other method of a known
        // path answers 405 with Allow (MethodNotAllowedMiddleware).
        var methods: [(path: String, method: HTTPRequest.Method)] = []
        func on(
            _ method: HTTPRequest.Method, _ path: String,
            _ handler: @escaping @Sendable (Request, DepotRequestContext) async throws -> Response
        ) {
            v1.on(RouterPath(path), method: method, use: handler)
            methods.append((path, method))
        }
        on(.get, "health") { _, context in
            var stores: [Health.Store] = []
            for s in self.jobs.stores.all {
                let ok: Bool
                do {
                    // A read, never the writer: health must not wait for an
                    // import's save (issue 51: p99 1.9 s during imports, past
                    // a watchdog's or a load balancer's 1 s). The watchdog
                    // still asks the writer (`ping`).
                    _ = try await s.reads.latestToken()
                    ok = true
                } catch {
                    ok = false
                }
                stores.append(Health.Store(name: s.name, ok: ok))
            }
            let all = await self.jobs.all()
            return try JSONResponse.encode(
                Health(
                    status: "ok", stores: stores,
                    jobs: Health.Jobs(
                        running: all.filter { $0.state == .running }.count,
                        queued: all.filter { $0.state == .queued }.count)))
        }
        on(.get, "me") { _, context in
            return try self.me(context)
        }
        on(.get, "figures") { _, context in
            return try JSONResponse.encode(self.metrics.figures.all)
        }
        on(.get, "metrics") { _, context in
            var lag: [(store: String, consumers: [DepotEngine.Consumer])] = []
            var processors: [(store: String, processors: [ProcessorInfo])] = []
            for store in self.jobs.stores.all {
                lag.append((store.name, try await store.reads.consumers()))
                processors.append((store.name, try await store.reads.processors()))
            }
            var buffer = ByteBuffer()
            buffer.writeString(
                self.metrics.render() + Metrics.consumerLag(lag) + Metrics.processorProgress(processors))
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: buffer))
        }
        on(.get, "stores") { _, context in
            var items: [StoreInfo] = []
            for s in self.jobs.stores.all { items.append(try await self.describe(s)) }
            return try JSONResponse.encode(StoreList(stores: items))
        }
        on(.get, "stores/:store") { _, context in
            return try JSONResponse.encode(try await self.describe(try await self.store(context)))
        }
        on(.get, "stores/:store/check") { request, context in
            return try await self.check(request, context)
        }
        on(.post, "stores/:store/entities/:entity/fetch") { request, context in
            return try await self.fetch(request, context)
        }
        on(.post, "stores/:store/entities/:entity/aggregate") { request, context in
            return try await self.aggregate(request, context)
        }
        on(.post, "stores/:store/entities/:entity/duplicates") { request, context in
            return try await self.duplicates(request, context)
        }
        on(.post, "stores/:store/entities/:entity/export") { request, context in
            return try await self.export(request, context)
        }
        on(.post, "stores/:store/save") { request, context in
            return try await self.save(request, context)
        }
        on(.get, "stores/:store/entities/:entity/records/:id") { request, context in
            return try await self.getRecord(request, context)
        }
        on(.get, "stores/:store/entities/:entity/records/:id/history") { request, context in
            return try await self.recordHistory(request, context)
        }
        for method in [HTTPRequest.Method.put, .patch, .delete] {
            on(method, "stores/:store/entities/:entity/records/:id") { request, context in
                return try await self.writeRecord(request, context)
            }
        }
        on(.put, "stores/:store/entities/:entity") { request, context in
            return try await self.putEntity(request, context)
        }
        on(.delete, "stores/:store/entities/:entity") { _, context in
            return try await self.dropEntity(context)
        }
        on(.post, "stores/:store/migrate") { request, context in
            return try await self.migrate(request, context)
        }
        on(.post, "infer") { request, context in
            return try await self.infer(request, context)
        }
        on(.post, "stores/:store/entities/:entity/import") { request, context in
            return try await self.upload(request, context)
        }
        on(.get, "stores/:store/history") { request, context in
            return try await self.history(request, context)
        }
        on(.delete, "stores/:store/history") { request, context in
            let store = try await self.store(context)
            let q = request.uri.queryParameters
            let pruned =
                switch try JobSpec.Prune(
                    before: q.get("before").map { String($0) },
                    olderThan: q.get("older_than").map { String($0) })
                {
                case .before(let token): try await store.pruneHistory(before: token)
                case .olderThan(let age): try await store.pruneHistory(olderThan: age)
                }
            return try JSONResponse.encode(Self.pruneAnswer(pruned))
        }
        on(.get, "stores/:store/consumers") { _, context in
            return try await self.listConsumers(context)
        }
        on(.post, "stores/:store/consumers") { request, context in
            return try await self.createConsumer(request, context)
        }
        on(.delete, "stores/:store/consumers/:name") { _, context in
            return try await self.dropConsumer(context)
        }
        on(.post, "stores/:store/consumers/:name/ack") { request, context in
            return try await self.acknowledge(request, context)
        }
        on(.post, "stores/:store/consumers/:name/reset") { request, context in
            return try await self.resetConsumer(request, context)
        }
        on(.get, "stores/:store/processors") { _, context in
            return try await self.listProcessors(context)
        }
        on(.post, "stores/:store/processors") { request, context in
            return try await self.createProcessor(request, context)
        }
        on(.delete, "stores/:store/processors/:name") { _, context in
            return try await self.dropProcessor(context)
        }
        on(.post, "stores/:store/processors/:name/next") { _, context in
            return try await self.nextBatch(context)
        }
        on(.post, "stores/:store/processors/:name/commit") { request, context in
            return try await self.commitBatch(request, context)
        }
        on(.post, "jobs") { request, context in
            let body = try await JSONBody.decode(JobSubmission.self, from: request, limit: self.config.maxRequestBytes)
            let record = try await self.submit(body, context)
            return try JSONResponse.encode(record.wire, status: .accepted)
        }
        on(.get, "jobs") { _, context in
            var all = await self.jobs.all()
            // On a store several hosts serve, the jobs the others run too.
            let known = Set(all.map(\.id))
            var others: [JobRecord] = []
            for store in self.jobs.stores.shared {
                for (id, read) in try await store.jobs.all() where !known.contains(id) {
                    if case .success(let record) = read { others.append(record) }
                }
            }
            if !others.isEmpty {
                all = (all + others).enumerated().sorted {
                    ($0.element.created, $0.offset) < ($1.element.created, $1.offset)
                }
                .map(\.element)
            }
            return try JSONResponse.encode(JobList(jobs: all.map(\.wire)))
        }
        on(.get, "jobs/:id") { _, context in
            return try JSONResponse.encode(try await self.job(context).wire)
        }
        on(.delete, "jobs/:id") { _, context in
            let id = context.parameters.get("id") ?? ""
            return try JSONResponse.encode(try await self.jobs.cancel(id).wire)
        }
        on(.get, "jobs/:id/events") { _, context in
            let record = try await self.job(context)
            if await self.jobs.job(record.id) == nil, let store = self.jobs.stores.store(record.store),
                let interval = store.jobs.pollInterval
            {
                // Another host runs it: its record in the store, as it changes.
                return JSONResponse.stream(context, deadline: self.deadline(context), metrics: self.metrics) { write in
                    var last = record
                    try await write(Self.line(last.wire))
                    while !last.state.isFinal {
                        try await Task.sleep(for: min(interval, .seconds(1)))
                        guard let now = try await store.jobs.record(record.id) else { break }
                        if now != last {
                            last = now
                            try await write(Self.line(now.wire))
                        }
                    }
                }
            }
            let stream = await self.jobs.events(job: record.id)
            return JSONResponse.stream(context, deadline: self.deadline(context), metrics: self.metrics) { write in
                for await event in stream { try await write(Self.line(event.wire)) }
            }
        }
        on(.get, "jobs/:id/rejects") { _, context in
            let record = try await self.job(context)
            // Streamed from the file a megabyte at a time: a rejects file may
            // be as large as the input (issue #35: ten downloads of an 83 MB
            // file held 1 GB).
            let fd = record.rejects.map { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } ?? -1
            guard fd >= 0 else {
                return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: .init())
            }
            return self.fileResponse(fd, contentType: "application/x-ndjson", context) { errno in
                self.logger.error(
                    "a job's rejects cannot be read",
                    metadata: [
                        LogKey.jobID: "\(record.id)", LogKey.path: "\(record.rejects ?? "")",
                        LogKey.error: "\(String(cString: strerror(errno)))"
                    ])
                return APIError(.io, "the rejects of job \(record.id) cannot be read; see the daemon's log")
            }
        }
        on(.get, "jobs/:id/output") { _, context in
            return try await self.output(try await self.job(context), context)
        }
        on(.get, "watches") { _, context in
            let watches = await self.watcher?.list() ?? []
            let items = watches.map { w, pending in
                Watch(
                    path: w.path, store: w.store, entity: w.entity, format: w.format?.rawValue ?? "auto",
                    onConflict: w.onConflict.rawValue, maxRejects: w.maxRejects.text,
                    references: w.deferReferences ? "defer" : "check", deleteAfter: w.deleteAfter, pending: pending,
                    done: Self.files(in: w.path + "/.done"),
                    failed: Self.files(in: w.path + "/.failed", excluding: ".error.json"))
            }
            return try JSONResponse.encode(WatchList(watches: items))
        }
        on(.get, "events") { _, context in
            let stream = await self.jobs.events(job: nil)
            return JSONResponse.stream(context, deadline: self.deadline(context), metrics: self.metrics) { write in
                for await event in stream { try await write(Self.line(JobEvent(job: event.wire))) }
            }
        }
        addConsole(to: router)
        router.middlewares.add(
            MethodNotAllowedMiddleware(
                answered: methods.map { ("/v1/" + $0.path, $0.method) } + [
                    ("/console", .get), ("/console/:file", .get)
                ]))
        return router
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
        _ fd: Int32, contentType: String, _ context: DepotRequestContext,
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
