/// The settings of a job's kind, as `POST /v1/jobs` takes them and a job's
/// record shows them (DESIGN §5): an import's `path`, `format`,
/// `on_conflict`, `max_rejects`, `references` and its file's dialect
/// (`delimiter`, `quote`, `header`, `quotes`, `skip_initial_space`, `nulls`,
/// `columns`, `encoding`: what `depotctl infer` reports); a delete's `where`; an
/// update's `where`, `set` and `compute`; a dedupe's `by`, `keep`, `where`; an
/// export's `format`, `where`, `path`, `prefetch`; a prune's `before` or
/// `older_than`; a revert's `token` or `job`, and `on_conflict`. The daemon reads each for the kinds that have it.
///
/// ```swift
/// var settings = JobSettings()
/// settings.where = "budget < 100"
/// ```
public struct JobSettings: Sendable, Hashable, Codable {
    /// An import's input or an export's output, on the daemon's machine.
    ///
    /// ```swift
    /// settings.path = "/srv/inbox/trips.csv"
    /// ```
    public var path: String?
    /// `auto`, `csv`, `tsv`, `ndjson` or `json` (an import); `ndjson` or `csv` (an export).
    ///
    /// ```swift
    /// settings.format = "ndjson"
    /// ```
    public var format: String?
    /// `upsert`, `replace`, `skip` or `fail` (an import); `skip`, `fail` or
    /// `force` (a revert).
    ///
    /// ```swift
    /// settings.onConflict = "skip"
    /// ```
    public var onConflict: String?
    /// When an import fails for its rejects: a count (`1000`), a fraction
    /// (`0.01`) or a percentage (`1%`); a JSON number reads as the first two.
    ///
    /// ```swift
    /// settings.maxRejects = "1%"
    /// ```
    public var maxRejects: String?
    /// `check` (the default) or `defer`: an import keeps references to
    /// records not there (yet).
    ///
    /// ```swift
    /// settings.references = "defer"
    /// ```
    public var references: String?
    /// A CSV import's delimiter: one character (`;`, `|`, `\t` for a tab…);
    /// default `,` (`\t` for TSV).
    ///
    /// ```swift
    /// settings.delimiter = ";"
    /// ```
    public var delimiter: String?
    /// A CSV import's quote: `"` (the default) or `'`.
    ///
    /// ```swift
    /// settings.quote = "'"
    /// ```
    public var quote: String?
    /// A CSV import's escape inside quoted fields: `\` (`"a \"b\""` reads
    /// `a "b"`); unset, only a doubled quote is one.
    ///
    /// ```swift
    /// settings.escape = "\\"
    /// ```
    public var escape: String?
    /// Whether a CSV's first record names its columns (default true); without,
    /// the columns are `field_1`, `field_2`…
    ///
    /// ```swift
    /// settings.header = false
    /// ```
    public var header: Bool?
    /// `strict` (RFC 4180, the default) or `lenient`: a quote inside an
    /// unquoted field is text.
    ///
    /// ```swift
    /// settings.quotes = "lenient"
    /// ```
    public var quotes: String?
    /// Whether spaces after each delimiter are dropped (`a, "b, c"`).
    ///
    /// ```swift
    /// settings.skipInitialSpace = true
    /// ```
    public var skipInitialSpace: Bool?
    /// Spellings read as null in fields that are not strings (`""` for a
    /// quoted empty string), as `depotctl infer` reports them.
    ///
    /// ```swift
    /// settings.nulls = ["NA", "-"]
    /// ```
    public var nulls: [String]?
    /// The field of each column whose name is not its field's.
    ///
    /// ```swift
    /// settings.columns = ["Trip ID": "Trip_ID"]
    /// ```
    public var columns: [String: String]?
    /// The file's text encoding: `utf-8` (the default) or `latin-1`.
    ///
    /// ```swift
    /// settings.encoding = "latin-1"
    /// ```
    public var encoding: String?
    /// An export's relationships whose records each record embeds.
    ///
    /// ```swift
    /// settings.prefetch = ["customer"]
    /// ```
    public var prefetch: [String]?
    /// The predicate that selects the records (delete, update, dedupe, export).
    ///
    /// ```swift
    /// settings.where = "endDate < '2024-01-01'"
    /// ```
    public var `where`: String?
    /// The values of the `$name` placeholders in `where`, as a fetch's
    /// `arguments` are (delete, update, dedupe, export).
    ///
    /// ```swift
    /// settings.where = "budget > $min"
    /// settings.arguments = ["min": 1000]
    /// ```
    public var arguments: [String: JSONValue]?
    /// An update's fields and their new values (scalars).
    ///
    /// ```swift
    /// settings.set = ["isFavorite": true]
    /// ```
    public var set: [String: JSONValue]?
    /// An update's fields and the expressions computed for each record
    /// (DESIGN §17), in NSExpression's syntax.
    ///
    /// ```swift
    /// settings.compute = ["budget": "budget * 1.1", "code": "uppercase:(code)"]
    /// ```
    public var compute: [String: String]?
    /// A dedupe's fields whose equal values make duplicates.
    ///
    /// ```swift
    /// settings.by = ["name", "startDate"]
    /// ```
    public var by: [String]?
    /// Which record of a duplicate group a dedupe keeps: `keep-first` or `keep-last`.
    ///
    /// ```swift
    /// settings.keep = "keep-last"
    /// ```
    public var keep: String?
    /// A prune's token: the history up to it goes.
    ///
    /// ```swift
    /// settings.before = "41"
    /// ```
    public var before: String?
    /// A revert's transaction: its inverse is written (DESIGN §17).
    ///
    /// ```swift
    /// settings.token = "41"
    /// ```
    public var token: String?
    /// A revert's job: the inverse of every transaction it saved is written.
    ///
    /// ```swift
    /// settings.job = "j5c1e0d2a9b3f"
    /// ```
    public var job: String?
    /// A prune's age: the history older than it goes (`7d`).
    ///
    /// ```swift
    /// settings.olderThan = "30d"
    /// ```
    public var olderThan: String?
    /// A backup's check of its copy before it is renamed into place
    /// (`PRAGMA integrity_check` and the counts, DESIGN §20).
    ///
    /// ```swift
    /// settings.verify = true
    /// ```
    public var verify: Bool?

    /// No settings.
    ///
    /// ```swift
    /// let none = JobSettings()
    /// ```
    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, format, onConflict = "on_conflict", maxRejects = "max_rejects", references, prefetch
        case delimiter, quote, escape, header, quotes, skipInitialSpace = "skip_initial_space", nulls, columns, encoding
        case `where`, arguments, set, compute, by, keep, before, olderThan = "older_than", token, job, verify
    }

    /// Reads the settings; `max_rejects` may be a JSON number.
    ///
    /// ```swift
    /// let settings = try JSONDecoder().decode(JobSettings.self, from: Data(#"{"where": "budget > 10"}"#.utf8))
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        path = try c.decodeIfPresent(String.self, forKey: .path)
        format = try c.decodeIfPresent(String.self, forKey: .format)
        onConflict = try c.decodeIfPresent(String.self, forKey: .onConflict)
        if c.contains(.maxRejects), try !c.decodeNil(forKey: .maxRejects) {
            if let text = try? c.decode(String.self, forKey: .maxRejects) {
                maxRejects = text
            } else if let count = try? c.decode(Int.self, forKey: .maxRejects) {
                maxRejects = String(count)
            } else {
                maxRejects = String(try c.decode(Double.self, forKey: .maxRejects))
            }
        }
        references = try c.decodeIfPresent(String.self, forKey: .references)
        prefetch = try c.decodeIfPresent([String].self, forKey: .prefetch)
        delimiter = try c.decodeIfPresent(String.self, forKey: .delimiter)
        quote = try c.decodeIfPresent(String.self, forKey: .quote)
        escape = try c.decodeIfPresent(String.self, forKey: .escape)
        header = try c.decodeIfPresent(Bool.self, forKey: .header)
        quotes = try c.decodeIfPresent(String.self, forKey: .quotes)
        skipInitialSpace = try c.decodeIfPresent(Bool.self, forKey: .skipInitialSpace)
        nulls = try c.decodeIfPresent([String].self, forKey: .nulls)
        columns = try c.decodeIfPresent([String: String].self, forKey: .columns)
        encoding = try c.decodeIfPresent(String.self, forKey: .encoding)
        `where` = try c.decodeIfPresent(String.self, forKey: .where)
        arguments = try c.decodeIfPresent([String: JSONValue].self, forKey: .arguments)
        set = try c.decodeIfPresent([String: JSONValue].self, forKey: .set)
        compute = try c.decodeIfPresent([String: String].self, forKey: .compute)
        by = try c.decodeIfPresent([String].self, forKey: .by)
        keep = try c.decodeIfPresent(String.self, forKey: .keep)
        before = try c.decodeIfPresent(String.self, forKey: .before)
        olderThan = try c.decodeIfPresent(String.self, forKey: .olderThan)
        token = try c.decodeIfPresent(String.self, forKey: .token)
        job = try c.decodeIfPresent(String.self, forKey: .job)
        verify = try c.decodeIfPresent(Bool.self, forKey: .verify)
    }

    /// Writes the settings that are set.
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(settings)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(path, forKey: .path)
        try c.encodeIfPresent(format, forKey: .format)
        try c.encodeIfPresent(onConflict, forKey: .onConflict)
        try c.encodeIfPresent(maxRejects, forKey: .maxRejects)
        try c.encodeIfPresent(references, forKey: .references)
        try c.encodeIfPresent(prefetch, forKey: .prefetch)
        try c.encodeIfPresent(delimiter, forKey: .delimiter)
        try c.encodeIfPresent(quote, forKey: .quote)
        try c.encodeIfPresent(escape, forKey: .escape)
        try c.encodeIfPresent(header, forKey: .header)
        try c.encodeIfPresent(quotes, forKey: .quotes)
        try c.encodeIfPresent(skipInitialSpace, forKey: .skipInitialSpace)
        try c.encodeIfPresent(nulls, forKey: .nulls)
        try c.encodeIfPresent(columns, forKey: .columns)
        try c.encodeIfPresent(encoding, forKey: .encoding)
        try c.encodeIfPresent(`where`, forKey: .where)
        try c.encodeIfPresent(arguments, forKey: .arguments)
        try c.encodeIfPresent(set, forKey: .set)
        try c.encodeIfPresent(compute, forKey: .compute)
        try c.encodeIfPresent(by, forKey: .by)
        try c.encodeIfPresent(keep, forKey: .keep)
        try c.encodeIfPresent(before, forKey: .before)
        try c.encodeIfPresent(olderThan, forKey: .olderThan)
        try c.encodeIfPresent(token, forKey: .token)
        try c.encodeIfPresent(job, forKey: .job)
        try c.encodeIfPresent(verify, forKey: .verify)
    }
}

/// The body of `POST /v1/jobs`: the kind, the store, the entity (every kind
/// but `prune`) and the kind's settings, in one object.
///
/// ```swift
/// var request = JobRequest(kind: "delete", store: "travel", entity: "Trip")
/// request.settings.where = "budget < 100"
/// ```
public struct JobRequest: Sendable, Hashable, Codable {
    /// `import`, `delete`, `update`, `dedupe`, `export` or `prune`.
    ///
    /// ```swift
    /// print(request.kind)
    /// ```
    public var kind: String
    /// The store to work on.
    ///
    /// ```swift
    /// print(request.store)
    /// ```
    public var store: String
    /// The entity (every kind but `prune`).
    ///
    /// ```swift
    /// print(request.entity ?? "the whole store")
    /// ```
    public var entity: String?
    /// The kind's settings.
    ///
    /// ```swift
    /// request.settings.format = "ndjson"
    /// ```
    public var settings: JobSettings

    /// A request of `kind` on `store`.
    ///
    /// ```swift
    /// let prune = JobRequest(kind: "prune", store: "travel")
    /// ```
    public init(kind: String, store: String, entity: String? = nil, settings: JobSettings = JobSettings()) {
        self.kind = kind
        self.store = store
        self.entity = entity
        self.settings = settings
    }

    enum CodingKeys: String, CodingKey {
        case kind, store, entity
    }

    /// Reads a request: its fields and its settings from one object.
    ///
    /// ```swift
    /// let request = try JSONDecoder().decode(JobRequest.self, from: body)
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(String.self, forKey: .kind)
        store = try c.decode(String.self, forKey: .store)
        entity = try c.decodeIfPresent(String.self, forKey: .entity)
        settings = try JobSettings(from: decoder)
    }

    /// Writes the request as one object.
    ///
    /// ```swift
    /// let body = try JSONEncoder().encode(request)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(store, forKey: .store)
        try c.encodeIfPresent(entity, forKey: .entity)
        try settings.encode(to: encoder)
    }
}

/// `GET /v1/jobs`: every job, oldest first.
///
/// ```swift
/// let list = try JSONDecoder().decode(JobList.self, from: body)
/// ```
public struct JobList: Sendable, Hashable, Codable {
    /// The jobs.
    ///
    /// ```swift
    /// for job in list.jobs { print(job.id, job.state) }
    /// ```
    public var jobs: [Job]

    /// A list of `jobs`, as the daemon answers it.
    ///
    /// ```swift
    /// let line = try JSONEncoder().encode(JobList(jobs: try await client.jobs()))
    /// ```
    public init(jobs: [Job]) { self.jobs = jobs }
}

/// A line of `GET /v1/events`: a job's record as it changed.
///
/// ```swift
/// let event = try JSONDecoder().decode(JobEvent.self, from: Data(line.utf8))
/// ```
public struct JobEvent: Sendable, Hashable, Codable {
    /// The job, as it is now.
    ///
    /// ```swift
    /// print(event.job.id, event.job.state)
    /// ```
    public var job: Job

    package init(job: Job) { self.job = job }
}
