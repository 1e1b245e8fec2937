import Foundation
import NIOHTTP1

// The rest of the control API: the daemon's health, the watched folders,
// a store's check, any job, a prune's whole answer, and the answers that
// tools pass on as the daemon wrote them (records, history, live events,
// rejects, exports). depotctl is built on these and the other public calls.
extension DepotClient {
    /// Whether the daemon and each store answer, and how many jobs run and wait.
    ///
    /// ```swift
    /// let health = try await client.health()
    /// print(health.status, health.jobs.running, "running")
    /// ```
    public func health() async throws -> Health {
        try await json(Health.self, .GET, "/v1/health")
    }

    /// Who the daemon sees on this client's connection, and their role.
    ///
    /// ```swift
    /// let me = try await client.me()
    /// print(me.user ?? "uid \(me.uid)", me.role)
    /// ```
    public func me() async throws -> Identity {
        try await json(Identity.self, .GET, "/v1/me")
    }

    /// The daemon's own figures over the last hour (rows imported per
    /// second, save times, the largest consumer lag), a point every
    /// `interval` seconds.
    ///
    /// ```swift
    /// let figures = try await client.figures()
    /// print(figures.samples.count, "points")
    /// ```
    public func figures() async throws -> FigureList {
        try await json(FigureList.self, .GET, "/v1/figures")
    }

    /// The watched folders (`[[watch]]`), with their files waiting, done and failed.
    ///
    /// ```swift
    /// for w in try await client.watches() { print(w.path, w.pending, "waiting") }
    /// ```
    public func watches() async throws -> [Watch] {
        try await json(WatchList.self, .GET, "/v1/watches").watches
    }

    /// The references of `store` that point at nothing (DESIGN §12): a
    /// count per to-one, and the first `limit` of them (the daemon's default
    /// 100; 0 only counts them).
    ///
    /// ```swift
    /// let check = try await client.check(store: "shop")
    /// if check.total > 0 { print(check.total, "dangling references") }
    /// ```
    public func check(store: String, limit: Int? = nil) async throws -> ReferenceCheck {
        try await json(
            ReferenceCheck.self, .GET,
            "/v1/stores/\(Self.escaped(store))/check" + Self.query([("limit", limit.map(String.init))]))
    }

    /// Submits a job of any kind (`POST /v1/jobs`); the job, queued.
    ///
    /// ```swift
    /// var request = JobRequest(kind: "dedupe", store: "travel", entity: "Trip")
    /// request.settings.by = ["name", "startDate"]
    /// let job = try await client.submit(request)
    /// ```
    public func submit(_ request: JobRequest) async throws -> Job {
        try await json(Job.self, .POST, "/v1/jobs", body: request)
    }

    /// Prunes `store`'s history up to a token, or older than an age (`7d`),
    /// at once; how many transactions went, and what held the prune back.
    ///
    /// ```swift
    /// let answer = try await client.prune(store: "travel", olderThan: "30d")
    /// if let held = answer.heldBackBy { print("kept for", held.consumer) }
    /// ```
    public func prune(store: String, before token: String? = nil, olderThan age: String? = nil) async throws
        -> PruneAnswer
    {
        try await json(
            PruneAnswer.self, .DELETE,
            "/v1/stores/\(Self.escaped(store))/history" + Self.query([("before", token), ("older_than", age)]))
    }

    /// Creates a consumer that reads after `token`.
    ///
    /// ```swift
    /// try await client.createConsumer("indexer", store: "travel", after: "41")
    /// ```
    @discardableResult
    public func createConsumer(_ name: String, store: String, after token: String) async throws -> Consumer {
        try await json(
            Consumer.self, .POST, "/v1/stores/\(Self.escaped(store))/consumers",
            body: ConsumerBody(name: name, from: token))
    }

    /// Moves a consumer to read after `token`.
    ///
    /// ```swift
    /// try await client.resetConsumer("indexer", store: "travel", after: "41")
    /// ```
    @discardableResult
    public func resetConsumer(_ consumer: String, store: String, after token: String) async throws -> Consumer {
        try await json(
            Consumer.self, .POST,
            "/v1/stores/\(Self.escaped(store))/consumers/\(Self.escaped(consumer))/reset",
            body: ConsumerBody(from: token))
    }

    /// Applies a change set to `store` in one transaction, logged as one
    /// history transaction (DESIGN §16), or nothing of it: a refused save
    /// throws ``DepotClientError/Code/saveRefused`` or
    /// ``DepotClientError/Code/invalidChange`` with every failing change in
    /// ``DepotClientError/changes``.
    ///
    /// ```swift
    /// let answer = try await client.save(store: "shop", SaveBody(changes: [
    ///     SaveChange(.insert, entity: "Customer", record: ["id": "C9", "name": "Ada"]),
    ///     SaveChange(.update, entity: "Order", identifier: "O4", set: ["total": 41]),
    /// ]))
    /// print(answer.token ?? "nothing changed")
    /// ```
    @discardableResult
    public func save(store: String, _ body: SaveBody) async throws -> SaveAnswer {
        try await json(SaveAnswer.self, .POST, "/v1/stores/\(Self.escaped(store))/save", body: body)
    }

    // MARK: Answers as the daemon wrote them

    /// A fetch's answer as the daemon wrote it: `{"records": [...]}` (or
    /// `{"sections": ...}` with ``FetchRequest/sectionBy``), for a tool that
    /// passes the JSON on; it decodes as ``RecordsAnswer`` or ``SectionsAnswer``.
    ///
    /// ```swift
    /// FileHandle.standardOutput.write(Data(try await client.fetchJSON(request)))
    /// ```
    public func fetchJSON(_ request: FetchRequest) async throws -> [UInt8] {
        try await call(.POST, request.path("fetch"), body: .json(request.body()))
    }

    /// A duplicates answer as the daemon wrote it (``DuplicatesAnswer``),
    /// for a tool that passes the JSON on; ``duplicates(store:entity:by:where:arguments:limit:)``
    /// is the typed form.
    ///
    /// ```swift
    /// let json = try await client.duplicatesJSON(store: "travel", entity: "Trip", DuplicatesBody(by: ["name"]))
    /// ```
    public func duplicatesJSON(store: String, entity: String, _ body: DuplicatesBody) async throws -> [UInt8] {
        try await call(.POST, Self.entityPath(store, entity, "duplicates"), body: .json(body))
    }

    /// A live fetch's events as the daemon writes them, a line each
    /// (``WatchEvent``, or ``ChangeEvent`` with `changes`), until `onLine`
    /// returns false or the task is cancelled. ``live(_:)`` is the typed,
    /// reconnecting form.
    ///
    /// ```swift
    /// try await client.liveLines(request, changes: true) { line in print(line); return true }
    /// ```
    public func liveLines(
        _ request: FetchRequest, result: String? = nil, changes: Bool = false, since token: String? = nil,
        onLine: (String) async throws -> Bool
    ) async throws {
        var body = request.body(result: result)
        body.watch = true
        if changes { body.changes = true }
        body.since = token
        try await lines(.POST, request.path("fetch"), body: .json(body), onLine: onLine)
    }

    /// A page of history (``TransactionPage``), or with `follow` each new
    /// transaction (``HistoryTransaction``) as it commits, as the daemon
    /// writes them, a line each, until `onLine` returns false. A consumer
    /// reads after its token; `maxChanges` cuts a large transaction into
    /// parts. ``history(store:after:entity:author:limit:)`` is the typed form.
    ///
    /// ```swift
    /// try await client.historyLines(store: "travel", follow: true) { line in print(line); return true }
    /// ```
    public func historyLines(
        store: String, after token: String? = nil, consumer: String? = nil, entity: String? = nil,
        author: String? = nil, limit: Int? = nil, maxChanges: Int? = nil, follow: Bool = false,
        onLine: (String) async throws -> Bool
    ) async throws {
        let query = Self.query([
            ("after", token), ("consumer", consumer), ("entity", entity), ("author", author),
            ("limit", limit.map(String.init)), ("max_changes", maxChanges.map(String.init)),
            ("follow", follow ? "true" : nil)
        ])
        try await lines(.GET, "/v1/stores/\(Self.escaped(store))/history" + query, onLine: onLine)
    }

    /// The records job `id` rejected, a line each (``RejectedRecord``) as
    /// the rejects file holds them, until `onLine` returns false.
    ///
    /// ```swift
    /// try await client.rejectLines(ofJob: job.id) { line in print(line); return true }
    /// ```
    public func rejectLines(ofJob id: String, onLine: (String) async throws -> Bool) async throws {
        try await lines(.GET, "/v1/jobs/\(Self.escaped(id))/rejects", onLine: onLine)
    }

    /// Streams the records `where` selects as CSV or NDJSON, from one read
    /// snapshot, to `write` as they come; the number of records, from the
    /// answer's `Depot-Records` trailer.
    ///
    /// ```swift
    /// var body = ExportBody()
    /// body.format = "csv"
    /// let n = try await client.export(store: "travel", entity: "Trip", body) { bytes in
    ///     FileHandle.standardOutput.write(Data(bytes))
    /// }
    /// ```
    public func export(
        store: String, entity: String, _ body: ExportBody = ExportBody(), write: ([UInt8]) async throws -> Void
    ) async throws -> Int {
        let trailers = try await exchange(.POST, Self.entityPath(store, entity, "export"), body: .json(body)) {
            try await write($0)
            return true
        }
        guard let count = trailers?.first(name: "Depot-Records").flatMap({ Int($0) }) else {
            throw DepotClientError(
                .brokenAnswer, "the daemon ended the export without saying how many records it wrote")
        }
        return count
    }

    /// What export job `id` wrote, streamed to `write`.
    ///
    /// ```swift
    /// try await client.output(ofJob: job.id) { bytes in FileHandle.standardOutput.write(Data(bytes)) }
    /// ```
    public func output(ofJob id: String, write: ([UInt8]) async throws -> Void) async throws {
        try await exchange(.GET, "/v1/jobs/\(Self.escaped(id))/output") {
            try await write($0)
            return true
        }
    }
}
