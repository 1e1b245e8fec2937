import DepotEngine
import DepotWire
import Foundation
import Hummingbird

/// Processors (DESIGN §17): `enumerate(batchSize:)` for programs, exactly once.
extension ControlRoutes {
    /// A processor as the API shows it, with its rate and ETA.
    static func wire(_ p: ProcessorInfo) -> ProcessorState {
        let seconds = max((p.lastCommit ?? p.created).timeIntervalSince(p.created), 0.001)
        let rate = p.done > 0 ? Double(p.done) / seconds : 0
        return ProcessorState(
            name: p.name, entity: p.entity, where: p.predicate, batch: p.batch,
            lease: DurationText.format(p.lease), created: Timestamp.format(p.created),
            total: p.total, done: p.done, batches: p.batches, batchesDone: p.batchesDone, leased: p.leased,
            lastCommit: p.lastCommit.map(Timestamp.format), rate: (rate * 10).rounded() / 10,
            eta: p.finished || rate == 0 ? nil : (Double(p.total - p.done) / rate * 10).rounded() / 10,
            state: p.finished ? "finished" : "running")
    }

    func listProcessors(_ context: StoreRequestContext) async throws -> Response {
        let processors = try await context.store.reads.processors()
        return try JSONResponse.encode(ProcessorList(processors: processors.map(Self.wire)))
    }

    func createProcessor(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(ProcessorBody.self, from: request, limit: config.maxRequestBytes)
        let lease = try JobSetting.read("lease", body.lease ?? "30s", JobSetting.lease)
        let info = try await store.createProcessor(
            ProcessorSpec(
                name: body.name, entity: body.entity, where: body.where, batch: body.batch ?? 500, lease: lease))
        return try JSONResponse.encode(Self.wire(info), status: .created)
    }

    /// How long `next` waits while every batch left is leased, before it
    /// answers `409` with `Retry-After` (a client asks again).
    static let longestNextWait: Duration = .seconds(8)

    /// The next batch under a new lease; while every batch left is leased,
    /// waits until one lapses or a commit comes (at most
    /// ``longestNextWait``); `204` once all are committed.
    func nextBatch(_ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let name = context.parameters.get("name") ?? ""
        let saves = context.saves
        let clock = ContinuousClock()
        let deadline = clock.now + Self.longestNextWait
        while true {
            let version = store.reads.commitCount
            // The lease is a request of the store's save queue: it reads the
            // processor once and shares the group's commit.
            let reply = try await saves.save(SaveRequest.next(of: name))
            guard let next = reply.next, let info = reply.processor else {
                throw APIError(.internal, "a processor's next batch came back without it")
            }
            switch next {
            case .finished:
                return Response(status: .noContent)
            case .batch(let batch):
                let records = try await store.records(of: batch, entity: info.entity)
                var out = Array("{\"lease\":".utf8)
                out += Array(JSONText.quoted(batch.lease).utf8)
                out += Array(",\"expires\":".utf8)
                out += Array(JSONText.quoted(Timestamp.format(batch.expires)).utf8)
                out += Array(",\"records\":".utf8)
                out += records
                out.append(UInt8(ascii: "}"))
                return JSONResponse.raw(out)
            case .leasedUntil(let until):
                let left = deadline - clock.now
                guard left > .zero else {
                    let seconds = max(1, Int(until.timeIntervalSinceNow.rounded(.down)))
                    var response = JSONResponse.make(
                        APIError(
                            .conflict,
                            "every batch left of processor \(JSONText.quoted(name)) is under a lease; the first lapses "
                                + "at \(Timestamp.format(until)), unless it is committed before: ask again"
                        ).body, status: .conflict)
                    response.headers[.retryAfter] = String(min(seconds, 8))
                    return response
                }
                let wait = max(0, Int64((until.timeIntervalSinceNow * 1000).rounded(.up)))
                try await Self.waitForCommit(store, after: version, atMost: min(.milliseconds(wait + 5), left))
            }
        }
    }

    /// Returns after a commit to `store` after `version`, or after `limit`.
    static func waitForCommit(_ store: any StoreBackend, after version: UInt64, atMost limit: Duration) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = await store.reads.waitForCommit(after: version) }
            group.addTask { try await Task.sleep(for: limit) }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// The batch's changes and the cursor's move in one save; a lapsed or
    /// replayed lease changes nothing (`409`).
    func commitBatch(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let name = context.parameters.get("name") ?? ""
        let body = try await JSONBody.decode(ProcessorCommitBody.self, from: request, limit: saveBodyLimit(context))
        let save = SaveBody(author: body.author, merge: body.merge, changes: body.changes ?? [])
        let changeSet = try Self.changeSet(save, reads: store.reads)
        let author = body.author ?? context.peer.map { $0.userName ?? "uid:\($0.uid)" } ?? "depotd"
        let limit = context.configuration?.maxSaveChanges ?? 10_000
        var saveRequest = SaveRequest(changeSet, author: author, limit: limit)
        saveRequest.processorLease = ProcessorLease(processor: name, lease: body.lease)
        // The save reads the processor once, in its transaction: an unknown
        // one is its 404, and its progress after the commit is the answer's.
        let reply = try await context.saves.save(saveRequest)
        guard let result = reply.result, let processor = reply.processor else {
            throw APIError(.internal, "a processor's commit came back without its processor")
        }
        return JSONResponse.raw(try Self.commitAnswer(result, processor: Self.wire(processor)))
    }

    /// A commit's answer, ``ProcessorCommitAnswer`` as `WireJSON.encoder`
    /// writes it (sorted keys, `token` left out when there is none), its
    /// changes written by hand: with `JSONEncoder`, answering a commit of
    /// 500 changes took 11% of the daemon's time on a processor's run
    /// (issue #32's profile). `ProcessorAnswerTests` holds the two to one answer.
    static func commitAnswer(_ result: SaveResult, processor: ProcessorState) throws -> [UInt8] {
        var out = "{\"changes\":["
        for (k, c) in result.changes.enumerated() {
            if k > 0 { out += "," }
            out += "{\"effect\":"
            JSONText.appendQuoted(c.effect.rawValue, to: &out)
            out += ",\"entity\":"
            JSONText.appendQuoted(c.entity, to: &out)
            out += ",\"identifier\":"
            Identifier.appendJSON(c.identifier, to: &out)
            out += ",\"index\":\(c.index),\"kind\":"
            JSONText.appendQuoted(c.kind.rawValue, to: &out)
            out += "}"
        }
        out += "],\"processor\":"
        out += String(decoding: try WireJSON.encoder.encode(processor), as: UTF8.self)
        if let token = result.token {
            out += ",\"token\":"
            JSONText.appendQuoted(token.description, to: &out)
        }
        out += "}"
        return Array(out.utf8)
    }

    func dropProcessor(_ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let name = context.parameters.get("name") ?? ""
        guard try await store.dropProcessor(name) else {
            throw DepotError(
                .unknownProcessor,
                "store \(JSONText.quoted(store.name)) has no processor \(JSONText.quoted(name))")
        }
        return Response(status: .noContent)
    }
}
