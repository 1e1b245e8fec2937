import Foundation
import NIOHTTP1

/// How an import reads its data and treats what is already stored.
///
/// ```swift
/// let options = ImportOptions(format: .csv, onConflict: .skip, maxRejects: "1%")
/// ```
public struct ImportOptions: Sendable, Hashable {
    /// The data's format.
    ///
    /// ```swift
    /// ImportOptions(format: .ndjson)
    /// ```
    public enum Format: String, Sendable, Hashable {
        /// RFC 4180 CSV with a header line.
        ///
        /// ```swift
        /// ImportOptions(format: .csv)
        /// ```
        case csv
        /// Tab-separated values with a header line.
        ///
        /// ```swift
        /// ImportOptions(format: .tsv)
        /// ```
        case tsv
        /// One JSON object per line.
        ///
        /// ```swift
        /// ImportOptions(format: .ndjson)
        /// ```
        case ndjson
        /// One JSON array of objects.
        ///
        /// ```swift
        /// ImportOptions(format: .json)
        /// ```
        case json
    }

    /// What a record whose identifier is stored already does.
    ///
    /// ```swift
    /// ImportOptions(onConflict: .skip)
    /// ```
    public enum ConflictPolicy: String, Sendable, Hashable {
        /// Sets the fields given (the default).
        ///
        /// ```swift
        /// ImportOptions(onConflict: .upsert)
        /// ```
        case upsert
        /// Replaces the record whole.
        ///
        /// ```swift
        /// ImportOptions(onConflict: .replace)
        /// ```
        case replace
        /// Keeps the stored record.
        ///
        /// ```swift
        /// ImportOptions(onConflict: .skip)     // only new identifiers get in
        /// ```
        case skip
        /// Fails the job, keeping nothing of the unsaved batch.
        ///
        /// ```swift
        /// ImportOptions(onConflict: .fail)     // a known identifier stops the job
        /// ```
        case fail
    }

    /// The format; `nil` lets the daemon tell by the file's extension (CSV for an upload).
    ///
    /// ```swift
    /// options.format = .tsv
    /// ```
    public var format: Format?
    /// The conflict policy; `nil` for the daemon's default, upsert.
    ///
    /// ```swift
    /// options.onConflict = .replace
    /// ```
    public var onConflict: ConflictPolicy?
    /// Rejects allowed before the job fails: a count (`"1000"`), a fraction (`"0.01"`) or `"1%"`.
    ///
    /// ```swift
    /// options.maxRejects = "0.5%"
    /// ```
    public var maxRejects: String?
    /// For entities with relationships: `"check"` (the default) or `"defer"`.
    ///
    /// ```swift
    /// options.references = "defer"     // lines before their orders
    /// ```
    public var references: String?

    /// Options; each left out takes the daemon's default.
    ///
    /// ```swift
    /// let strict = ImportOptions(format: .csv, onConflict: .fail, maxRejects: "0")
    /// ```
    public init(
        format: Format? = nil, onConflict: ConflictPolicy? = nil, maxRejects: String? = nil,
        references: String? = nil
    ) {
        self.format = format
        self.onConflict = onConflict
        self.maxRejects = maxRejects
        self.references = references
    }

    /// The options as a job's settings.
    /// The file's delimiter: one character (`\t` for a tab); default `,`.
    ///
    /// ```swift
    /// var options = ImportOptions(format: .csv)
    /// options.delimiter = ";"
    /// ```
    public var delimiter: String?
    /// The file's quote: `"` (the default) or `'`.
    ///
    /// ```swift
    /// options.quote = "'"
    /// ```
    public var quote: String?
    /// The escape before a quote inside a quoted field: `\\` (unset: only
    /// a doubled quote is one).
    ///
    /// ```swift
    /// options.escape = "\\"
    /// ```
    public var escape: String?
    /// False when the file's first record is data (columns `field_1`…).
    ///
    /// ```swift
    /// options.header = false
    /// ```
    public var header: Bool?
    /// `strict` (the default) or `lenient`: a quote inside an unquoted field is text.
    ///
    /// ```swift
    /// options.quotes = "lenient"
    /// ```
    public var quotes: String?
    /// Whether spaces after each delimiter are dropped.
    ///
    /// ```swift
    /// options.skipInitialSpace = true
    /// ```
    public var skipInitialSpace: Bool?
    /// Spellings read as null in fields that are not strings.
    ///
    /// ```swift
    /// options.nulls = ["NA", "-"]
    /// ```
    public var nulls: [String]?
    /// `utf-8` (the default) or `latin-1`.
    ///
    /// ```swift
    /// options.encoding = "latin-1"
    /// ```
    public var encoding: String?
    /// The field of each column whose name is not its field's.
    ///
    /// ```swift
    /// options.columns = ["Trip ID": "Trip_ID"]
    /// ```
    public var columns: [String: String]?
    /// An upload only: infer the file (DESIGN §18), create the entity from
    /// it when it does not exist, and import with the dialect inferred.
    ///
    /// ```swift
    /// options.create = true
    /// ```
    public var create: Bool?

    var settings: JobSettings {
        var s = JobSettings()
        s.format = format?.rawValue
        s.onConflict = onConflict?.rawValue
        s.maxRejects = maxRejects
        s.references = references
        s.delimiter = delimiter
        s.quote = quote
        s.escape = escape
        s.header = header
        s.quotes = quotes
        s.skipInitialSpace = skipInitialSpace
        s.nulls = nulls
        s.encoding = encoding
        s.columns = columns
        return s
    }

    /// The options as an upload's query parameters.
    var members: [(String, String)] {
        let all: [(String, String?)] = [
            ("format", format?.rawValue), ("on_conflict", onConflict?.rawValue), ("max_rejects", maxRejects),
            ("references", references), ("delimiter", delimiter), ("quote", quote), ("escape", escape),
            ("header", header.map { String($0) }), ("quotes", quotes),
            ("skip_initial_space", skipInitialSpace.map { String($0) }), ("nulls", nulls?.joined(separator: ",")),
            ("encoding", encoding), ("create", create.map { String($0) }),
            ("columns", columns.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) })
        ]
        return all.compactMap { key, value in value.map { (key, $0) } }
    }
}

extension DepotClient {
    /// Imports a file on the daemon's machine (under its `import_roots`);
    /// answers at once with the queued job. Follow it with ``progress(of:)``.
    ///
    /// ```swift
    /// let job = try await client.importFile("/var/lib/depot/inbox/trips.csv", store: "travel", entity: "Trip")
    /// for try await state in client.progress(of: job.id) { print(state.read, state.state) }
    /// ```
    public func importFile(
        _ path: String, store: String, entity: String,
        options: ImportOptions = ImportOptions()
    ) async throws -> Job {
        var settings = options.settings
        settings.path = path
        return try await json(
            Job.self, .POST, "/v1/jobs",
            body: JobRequest(kind: "import", store: store, entity: entity, settings: settings))
    }

    /// Uploads `bytes` (spooled to disk by the daemon first, so the import
    /// is durable and resumable) and imports them; answers with the job.
    ///
    /// ```swift
    /// let csv = Array("id,name,startDate,budget,isFavorite\nt1,Paris,2025-04-01,900,true\n".utf8)
    /// let job = try await client.importData(csv, store: "travel", entity: "Trip", options: ImportOptions(format: .csv))
    /// ```
    public func importData(
        _ bytes: [UInt8], store: String, entity: String,
        options: ImportOptions = ImportOptions()
    ) async throws -> Job {
        try await upload(
            .bytes(bytes, contentType: Self.contentType(options.format)), store: store, entity: entity,
            options: options)
    }

    /// Uploads a local file, streamed from disk, and imports it; answers
    /// with the job. For a file the daemon can read itself, ``importFile(_:store:entity:options:)``.
    ///
    /// ```swift
    /// let job = try await client.upload(file: "trips.ndjson", store: "travel", entity: "Trip",
    ///                                   options: ImportOptions(format: .ndjson))
    /// ```
    public func upload(
        file path: String, store: String, entity: String,
        options: ImportOptions = ImportOptions()
    ) async throws -> Job {
        var options = options
        if options.format == nil {
            let ext = (path as NSString).pathExtension.lowercased()
            options.format = ["jsonl": .ndjson, "ndjson": .ndjson, "json": .json, "tsv": .tsv][ext] ?? .csv
        }
        // The file's own name, which an entity created from it and the
        // errors of its inference name (not the daemon's spool file).
        let name = (path as NSString).lastPathComponent
        return try await upload(
            .file(path: path, contentType: Self.contentType(options.format)), store: store,
            entity: entity, options: options, name: options.create == true ? name : nil)
    }

    private func upload(
        _ body: RequestBody, store: String, entity: String, options: ImportOptions, name: String? = nil
    ) async throws -> Job {
        let query = (options.members + (name.map { [("name", $0)] } ?? []))
            .map { "\($0)=\(Self.escaped($1))" }.joined(separator: "&")
        let path = Self.entityPath(store, entity, "import") + (query.isEmpty ? "" : "?" + query)
        return try Self.decode(Job.self, try await call(.POST, path, body: body), answering: "POST \(path)")
    }

    private static func contentType(_ format: ImportOptions.Format?) -> String {
        switch format {
        case .ndjson: "application/x-ndjson"
        case .json: "application/json"
        case .tsv: "text/tab-separated-values"
        default: "text/csv"
        }
    }

    /// Sets fields of the records `where` selects, to values (`set`) or to
    /// expressions computed from each record (`compute`, DESIGN §17), in a
    /// job. A record whose computed value its field cannot hold is rejected
    /// (the job's `rejects` file lists it) and the others are saved.
    ///
    /// ```swift
    /// let job = try await client.update(store: "travel", entity: "Trip", where: "destination == 'Pariss'",
    ///                                   set: ["destination": "Paris"])
    /// let raise = try await client.update(store: "travel", entity: "Trip", where: "destination == 'Paris'",
    ///                                     compute: ["budget": "budget * 1.1"])
    /// ```
    public func update(
        store: String, entity: String, where predicate: String, arguments: [String: JSONValue] = [:],
        set values: [String: JSONValue] = [:], compute: [String: String] = [:]
    ) async throws -> Job {
        var settings = JobSettings()
        settings.where = predicate
        if !arguments.isEmpty { settings.arguments = arguments }
        if !values.isEmpty || compute.isEmpty { settings.set = values }
        if !compute.isEmpty { settings.compute = compute }
        return try await json(
            Job.self, .POST, "/v1/jobs",
            body: JobRequest(kind: "update", store: store, entity: entity, settings: settings))
    }

    /// Takes back a history transaction (`token`) or every transaction of a
    /// job (`job`), in a job (DESIGN §17): its inverse is written as a new
    /// transaction. `onConflict` is `skip` (the default), `fail` or `force`.
    ///
    /// ```swift
    /// let job = try await client.revert(store: "travel", token: "41")
    /// ```
    public func revert(store: String, token: String? = nil, job: String? = nil, onConflict: String? = nil)
        async throws -> Job
    {
        var settings = JobSettings()
        settings.token = token
        settings.job = job
        settings.onConflict = onConflict
        return try await json(
            Job.self, .POST, "/v1/jobs", body: JobRequest(kind: "revert", store: store, settings: settings))
    }

    /// Deletes the records `where` selects, in a job (delete rules apply).
    ///
    /// ```swift
    /// let job = try await client.delete(store: "travel", entity: "Trip", where: "endDate < '2020-01-01'")
    /// let old = try await client.delete(store: "travel", entity: "Trip", where: "endDate < $d",
    ///                                   arguments: ["d": "2020-01-01"])
    /// ```
    public func delete(
        store: String, entity: String, where predicate: String, arguments: [String: JSONValue] = [:]
    ) async throws -> Job {
        var settings = JobSettings()
        settings.where = predicate
        if !arguments.isEmpty { settings.arguments = arguments }
        return try await json(
            Job.self, .POST, "/v1/jobs",
            body: JobRequest(kind: "delete", store: store, entity: entity, settings: settings))
    }

    /// Every job the daemon knows, oldest first.
    ///
    /// ```swift
    /// let running = try await client.jobs().filter { $0.state == .running }
    /// ```
    public func jobs() async throws -> [Job] {
        try await json(JobList.self, .GET, "/v1/jobs").jobs
    }

    /// One job's record.
    ///
    /// ```swift
    /// let state = try await client.job(id).state
    /// ```
    ///
    /// - Throws: ``DepotClientError`` with ``DepotClientError/Code/unknownJob``.
    public func job(_ id: String) async throws -> Job {
        try await json(Job.self, .GET, "/v1/jobs/\(Self.escaped(id))")
    }

    /// Cancels a job: at once if queued, at its next save if running;
    /// answers with its record.
    ///
    /// ```swift
    /// _ = try await client.cancel(job.id)
    /// ```
    @discardableResult
    public func cancel(_ id: String) async throws -> Job {
        try await json(Job.self, .DELETE, "/v1/jobs/\(Self.escaped(id))")
    }

    /// A job's record each time it changes (at least once a second while it
    /// runs), ending with its final state. Breaking out of the loop, or
    /// cancelling the task, closes the connection.
    ///
    /// ```swift
    /// for try await job in client.progress(of: id) {
    ///     print("\(job.read) rows, \(job.state)")
    /// }
    /// ```
    public func progress(of id: String) -> AsyncThrowingStream<Job, any Error> {
        stream("/v1/jobs/\(Self.escaped(id))/events", as: Job.self) { $0.state.isFinal }
    }

    /// A stream of `T`s, one per NDJSON line of `GET path`, until `isLast`
    /// holds for one or the daemon ends the stream.
    func stream<T: Decodable & Sendable>(
        _ path: String, as type: T.Type,
        isLast: @escaping @Sendable (T) -> Bool = { _ in false }
    )
        -> AsyncThrowingStream<T, any Error>
    {
        let (stream, continuation) = AsyncThrowingStream<T, any Error>.makeStream()
        // Unstructured: it feeds the stream returned here; the stream's termination cancels it.
        let task = Task {
            do {
                try await lines(.GET, path) { line in
                    let value = try Self.decode(T.self, Array(line.utf8), answering: "GET \(path)")
                    continuation.yield(value)
                    return !isLast(value) && !Task.isCancelled
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
