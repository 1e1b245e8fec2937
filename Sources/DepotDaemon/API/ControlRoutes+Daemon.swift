import DepotEngine
import DepotWire
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The handlers that the routes of ``ControlRoutes/router()`` name and that
/// have no file of their own.
extension ControlRoutes {
    /// `GET /v1/health`: each store answering a read, and the jobs running and queued.
    func health() async throws -> Response {
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

    /// `GET /v1/metrics`: Prometheus' text, with each consumer's lag and each processor's progress.
    func metricsText() async throws -> Response {
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

    /// `DELETE /v1/stores/{store}/history`: the history before a token, or older than an age, pruned.
    func prune(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
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

    /// `GET /v1/jobs`: this host's jobs, and on a store several hosts serve, the others' too.
    func jobList() async throws -> Response {
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

    /// `GET /v1/jobs/{id}/events`: the job's events as they happen (its record as it changes, when another host runs it).
    func jobEvents(_ context: DepotRequestContext) async throws -> Response {
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

    /// `GET /v1/jobs/{id}/rejects`: the records a job rejected, as NDJSON.
    func rejects(_ context: DepotRequestContext) async throws -> Response {
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

    /// `GET /v1/watches`: the watched folders, with their files pending, done and failed.
    func watches() async throws -> Response {
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
}
