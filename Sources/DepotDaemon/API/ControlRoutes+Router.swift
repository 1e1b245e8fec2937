import DepotEngine
import DepotWire
import Foundation
import HTTPTypes
package import Hummingbird
import NIOCore

/// The routes of one resource (DESIGN §5): those that read, which the
/// `read` role may ask, and those that write, each in a Hummingbird
/// `RouteCollection` that ``ControlRoutes/router()`` mounts behind the role
/// middleware of its group.
final class ResourceRoutes<Context: ConnectionContext> {
    /// The routes the `read` role may ask.
    let reads = RouteCollection(context: Context.self)
    /// The routes that need the `write` role.
    let writes = RouteCollection(context: Context.self)
    /// Each route's path (relative to where the resource is mounted) and method.
    private(set) var answered: [(path: String, method: HTTPRequest.Method)] = []

    /// Adds a route that reads (a `GET`, or a `POST` whose body is a query).
    func read(
        _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) {
        reads.on(RouterPath(path), method: method, use: handler)
        answered.append((path, method))
    }

    /// Adds a route that writes.
    func write(
        _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) {
        writes.on(RouterPath(path), method: method, use: handler)
        answered.append((path, method))
    }
}

extension ControlRoutes {
    /// The control API under `/v1`, a resource at a time; the console at `/console`.
    ///
    /// Each resource's reads are mounted behind `RoleMiddleware(.read)` and
    /// its writes behind `RoleMiddleware(.write)`; a resource under
    /// `/v1/stores/{store}` gets its store in its context
    /// (``StoreRequestContext``), resolved once, after the role check.
    package func router() -> Router<DepotRequestContext> {
        let router = Router(context: DepotRequestContext.self)
        router.middlewares.add(
            APIMiddleware(metrics: metrics, logger: logger, stores: jobs.stores, settings: settings))
        var answered: [(path: String, method: HTTPRequest.Method)] = []
        let v1 = router.group("v1")
        for resource in [daemonRoutes(), jobRoutes()] {
            v1.group().add(middleware: RoleMiddleware<DepotRequestContext>(role: .read, settings: settings)).addRoutes(
                resource.reads)
            v1.group().add(middleware: RoleMiddleware<DepotRequestContext>(role: .write, settings: settings)).addRoutes(
                resource.writes)
            answered += resource.answered.map { ("/v1/" + $0.path, $0.method) }
        }
        for resource in [storeRoutes(), entityRoutes(), recordRoutes(), consumerRoutes(), processorRoutes()] {
            for (collection, role) in [(resource.reads, Role.read), (resource.writes, .write)] {
                v1.group().add(middleware: RoleMiddleware<DepotRequestContext>(role: role, settings: settings))
                    .group("stores/:store", context: StoreRequestContext.self).addRoutes(collection)
            }
            answered += resource.answered.map {
                ("/v1/stores/:store" + ($0.path.isEmpty ? "" : "/" + $0.path), $0.method)
            }
        }
        addConsole(to: router)
        // Any other method of a known path answers 405 with Allow.
        router.middlewares.add(
            MethodNotAllowedMiddleware(answered: answered + [("/console", .get), ("/console/:file", .get)]))
        return router
    }

    /// The daemon itself: health, who asks, figures and metrics, the job
    /// events, the watched folders, the stores, and inference.
    func daemonRoutes() -> ResourceRoutes<DepotRequestContext> {
        let routes = ResourceRoutes<DepotRequestContext>()
        routes.read(.get, "health") { _, _ in try await self.health() }
        routes.read(.get, "me") { _, context in try self.me(context) }
        routes.read(.get, "figures") { _, _ in try JSONResponse.encode(self.metrics.figures.all) }
        routes.read(.get, "metrics") { _, _ in try await self.metricsText() }
        routes.read(.get, "stores") { _, _ in
            var items: [StoreInfo] = []
            for s in self.jobs.stores.all { items.append(try await self.describe(s)) }
            return try JSONResponse.encode(StoreList(stores: items))
        }
        routes.read(.get, "watches") { _, _ in try await self.watches() }
        routes.read(.get, "events") { _, context in
            let stream = await self.jobs.events(job: nil)
            return JSONResponse.stream(context, deadline: self.deadline(context), metrics: self.metrics) { write in
                for await event in stream { try await write(Self.line(JobEvent(job: event.wire))) }
            }
        }
        // An inference reads a file and writes nothing.
        routes.read(.post, "infer") { request, context in try await self.infer(request, context) }
        return routes
    }

    /// A store: its description and check, its history (and pruning), a
    /// migration, a save.
    func storeRoutes() -> ResourceRoutes<StoreRequestContext> {
        let routes = ResourceRoutes<StoreRequestContext>()
        routes.read(.get, "") { _, context in try JSONResponse.encode(try await self.describe(context.store)) }
        routes.read(.get, "check") { request, context in try await self.check(request, context) }
        routes.read(.get, "history") { request, context in try await self.history(request, context) }
        routes.write(.delete, "history") { request, context in try await self.prune(request, context) }
        routes.write(.post, "migrate") { request, context in try await self.migrate(request, context) }
        routes.write(.post, "save") { request, context in try await self.save(request, context) }
        return routes
    }

    /// An entity: queries (fetch, aggregate, duplicates, export), its
    /// definition over the API, an upload to import.
    func entityRoutes() -> ResourceRoutes<StoreRequestContext> {
        let routes = ResourceRoutes<StoreRequestContext>()
        // Queries in a body: reads.
        routes.read(.post, "entities/:entity/fetch") { request, context in try await self.fetch(request, context) }
        routes.read(.post, "entities/:entity/aggregate") { request, context in
            try await self.aggregate(request, context)
        }
        routes.read(.post, "entities/:entity/duplicates") { request, context in
            try await self.duplicates(request, context)
        }
        routes.read(.post, "entities/:entity/export") { request, context in try await self.export(request, context) }
        routes.write(.put, "entities/:entity") { request, context in try await self.putEntity(request, context) }
        routes.write(.delete, "entities/:entity") { _, context in try await self.dropEntity(context) }
        routes.write(.post, "entities/:entity/import") { request, context in try await self.upload(request, context) }
        return routes
    }

    /// One record: read, its history, and the one-change saves.
    func recordRoutes() -> ResourceRoutes<StoreRequestContext> {
        let routes = ResourceRoutes<StoreRequestContext>()
        let record = "entities/:entity/records/:id"
        routes.read(.get, record) { request, context in try await self.getRecord(request, context) }
        routes.read(.get, record + "/history") { request, context in try await self.recordHistory(request, context) }
        for method in [HTTPRequest.Method.put, .patch, .delete] {
            routes.write(method, record) { request, context in try await self.writeRecord(request, context) }
        }
        return routes
    }

    /// The history's consumers.
    func consumerRoutes() -> ResourceRoutes<StoreRequestContext> {
        let routes = ResourceRoutes<StoreRequestContext>()
        routes.read(.get, "consumers") { _, context in try await self.listConsumers(context) }
        routes.write(.post, "consumers") { request, context in try await self.createConsumer(request, context) }
        routes.write(.delete, "consumers/:name") { _, context in try await self.dropConsumer(context) }
        routes.write(.post, "consumers/:name/ack") { request, context in try await self.acknowledge(request, context) }
        routes.write(.post, "consumers/:name/reset") { request, context in
            try await self.resetConsumer(request, context)
        }
        return routes
    }

    /// Processors: their list, and the leases and commits of their batches.
    func processorRoutes() -> ResourceRoutes<StoreRequestContext> {
        let routes = ResourceRoutes<StoreRequestContext>()
        routes.read(.get, "processors") { _, context in try await self.listProcessors(context) }
        routes.write(.post, "processors") { request, context in try await self.createProcessor(request, context) }
        routes.write(.delete, "processors/:name") { _, context in try await self.dropProcessor(context) }
        routes.write(.post, "processors/:name/next") { _, context in try await self.nextBatch(context) }
        routes.write(.post, "processors/:name/commit") { request, context in
            try await self.commitBatch(request, context)
        }
        return routes
    }

    /// Jobs: submitted, listed, followed, cancelled; their rejects and output.
    func jobRoutes() -> ResourceRoutes<DepotRequestContext> {
        let routes = ResourceRoutes<DepotRequestContext>()
        routes.write(.post, "jobs") { request, context in
            let body = try await JSONBody.decode(JobSubmission.self, from: request, limit: self.config.maxRequestBytes)
            let record = try await self.submit(body, context)
            return try JSONResponse.encode(record.wire, status: .accepted)
        }
        routes.read(.get, "jobs") { _, _ in try await self.jobList() }
        routes.read(.get, "jobs/:id") { _, context in try JSONResponse.encode(try await self.job(context).wire) }
        routes.write(.delete, "jobs/:id") { _, context in
            try JSONResponse.encode(try await self.jobs.cancel(context.parameters.get("id") ?? "").wire)
        }
        routes.read(.get, "jobs/:id/events") { _, context in try await self.jobEvents(context) }
        routes.read(.get, "jobs/:id/rejects") { _, context in try await self.rejects(context) }
        routes.read(.get, "jobs/:id/output") { _, context in try await self.output(try await self.job(context), context)
        }
        return routes
    }
}
