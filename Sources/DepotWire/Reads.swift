import Foundation

/// A record as the API sends it: its fields by name.
public typealias RecordObject = [String: JSONValue]

/// A whole number of a request (`limit`, `offset`): from 0 up; anything
/// else is refused with the key named.
extension KeyedDecodingContainer {
    func decodeCount(forKey key: Key) throws -> Int? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let n = try? decode(Int.self, forKey: key), n >= 0 { return n }
        throw DecodingError.dataCorrupted(
            .init(codingPath: codingPath + [key], debugDescription: "must be a whole number from 0 to \(Int.max)"))
    }
}

/// The body of `POST .../fetch` (DESIGN §5): what to fetch, and how.
///
/// ```swift
/// var query = FetchBody()
/// query.where = "budget > $min"
/// query.arguments = ["min": 1000]
/// ```
public struct FetchBody: Sendable, Hashable, Codable {
    /// The predicate.
    ///
    /// ```swift
    /// query.where = "destination == 'Paris'"
    /// ```
    public var `where`: String?
    /// Values for the predicate's `$name` placeholders (scalars).
    ///
    /// ```swift
    /// query.arguments = ["min": 1000]
    /// ```
    public var arguments: [String: JSONValue]?
    /// Field names; a leading `-` sorts descending.
    ///
    /// ```swift
    /// query.sort = ["-budget", "name"]
    /// ```
    public var sort: [String]?
    /// `first` or `last`: where nulls sort.
    ///
    /// ```swift
    /// query.nulls = "last"
    /// ```
    public var nulls: String?
    /// At most this many records.
    ///
    /// ```swift
    /// query.limit = 50
    /// ```
    public var limit: Int?
    /// Records to skip first.
    ///
    /// ```swift
    /// query.offset = 100
    /// ```
    public var offset: Int?
    /// The fields to send, key paths of embedded records included.
    ///
    /// ```swift
    /// query.fields = ["id", "name", "customer.name"]
    /// ```
    public var fields: [String]?
    /// Values computed for each record (DESIGN §17), sent after `fields`:
    /// in the JSON, objects in the `fields` array (`{"total": "price * qty"}`).
    ///
    /// ```swift
    /// query.computed = [ComputedFetchField(name: "total", expression: "price * qty")]
    /// ```
    public var computed: [ComputedFetchField]?
    /// A field whose values split the result into sections.
    ///
    /// ```swift
    /// query.sectionBy = "destination"
    /// ```
    public var sectionBy: String?
    /// Relationships whose records each record embeds.
    ///
    /// ```swift
    /// query.prefetch = ["customer", "lines.product"]
    /// ```
    public var prefetch: [String]?
    /// `records` (the default), `count` or `identifiers`.
    ///
    /// ```swift
    /// query.result = "count"
    /// ```
    public var result: String?
    /// Stream the result again at each commit that changes it.
    ///
    /// ```swift
    /// query.watch = true
    /// ```
    public var watch: Bool?
    /// With `watch`: stream what entered, changed or left the result.
    ///
    /// ```swift
    /// query.changes = true
    /// ```
    public var changes: Bool?
    /// With `changes`: resume after this token, without a first result.
    ///
    /// ```swift
    /// query.since = "41"
    /// ```
    public var since: String?

    /// A fetch of every record.
    ///
    /// ```swift
    /// let all = FetchBody()
    /// ```
    public init() {}

    enum CodingKeys: String, CodingKey {
        case `where`, arguments, sort, nulls, limit, offset, fields, sectionBy = "section_by", prefetch, result, watch
        case changes, since
    }

    /// Reads a query; `limit` and `offset` must be whole numbers from 0 up.
    ///
    /// ```swift
    /// let query = try JSONDecoder().decode(FetchBody.self, from: body)
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        `where` = try c.decodeIfPresent(String.self, forKey: .where)
        arguments = try c.decodeIfPresent([String: JSONValue].self, forKey: .arguments)
        sort = try c.decodeIfPresent([String].self, forKey: .sort)
        nulls = try c.decodeIfPresent(String.self, forKey: .nulls)
        limit = try c.decodeCount(forKey: .limit)
        offset = try c.decodeCount(forKey: .offset)
        if let entries = try c.decodeIfPresent([FieldEntry].self, forKey: .fields) {
            fields = entries.compactMap(\.name)
            let computed = entries.compactMap(\.computed)
            self.computed = computed.isEmpty ? nil : computed
        }
        sectionBy = try c.decodeIfPresent(String.self, forKey: .sectionBy)
        prefetch = try c.decodeIfPresent([String].self, forKey: .prefetch)
        result = try c.decodeIfPresent(String.self, forKey: .result)
        watch = try c.decodeIfPresent(Bool.self, forKey: .watch)
        changes = try c.decodeIfPresent(Bool.self, forKey: .changes)
        since = try c.decodeIfPresent(String.self, forKey: .since)
    }
}

extension FetchBody {
    /// Writes the body; computed fields go into `fields` as objects.
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(query)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(`where`, forKey: .where)
        try c.encodeIfPresent(arguments, forKey: .arguments)
        try c.encodeIfPresent(sort, forKey: .sort)
        try c.encodeIfPresent(nulls, forKey: .nulls)
        try c.encodeIfPresent(limit, forKey: .limit)
        try c.encodeIfPresent(offset, forKey: .offset)
        if fields != nil || computed != nil {
            try c.encode(
                (fields ?? []).map { FieldEntry(name: $0) } + (computed ?? []).map { FieldEntry(computed: $0) },
                forKey: .fields)
        }
        try c.encodeIfPresent(sectionBy, forKey: .sectionBy)
        try c.encodeIfPresent(prefetch, forKey: .prefetch)
        try c.encodeIfPresent(result, forKey: .result)
        try c.encodeIfPresent(watch, forKey: .watch)
        try c.encodeIfPresent(changes, forKey: .changes)
        try c.encodeIfPresent(since, forKey: .since)
    }

    /// One element of `fields`: a name, or `{"name": "expression"}`.
    struct FieldEntry: Codable {
        var name: String?
        var computed: ComputedFetchField?

        init(name: String) { self.name = name }
        init(computed: ComputedFetchField) { self.computed = computed }

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let name = try? c.decode(String.self) {
                self.name = name
                return
            }
            guard let object = try? c.decode([String: String].self), object.count == 1, let (k, v) = object.first
            else {
                throw DecodingError.dataCorruptedError(
                    in: c,
                    debugDescription:
                        "each of fields is a field's name or one computed field: {\"name\": \"expression\"}")
            }
            computed = ComputedFetchField(name: k, expression: v)
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            if let computed {
                try c.encode([computed.name: computed.expression])
            } else {
                try c.encode(name ?? "")
            }
        }
    }
}

/// A value a fetch computes for each record (DESIGN §17): an expression
/// in the predicates' syntax, sent under `name`.
///
/// ```swift
/// let total = ComputedFetchField(name: "total", expression: "price * qty")
/// ```
public struct ComputedFetchField: Sendable, Hashable, Codable {
    /// The key it is sent under.
    public var name: String
    /// The expression.
    public var expression: String

    /// A computed field.
    ///
    /// ```swift
    /// let up = ComputedFetchField(name: "code", expression: "uppercase:(code)")
    /// ```
    public init(name: String, expression: String) {
        self.name = name
        self.expression = expression
    }
}

/// The body of `POST .../aggregate`: statistics of a field, by group.
///
/// ```swift
/// var query = AggregateBody()
/// query.field = "budget"
/// query.functions = ["avg", "max"]
/// ```
public struct AggregateBody: Sendable, Hashable, Codable {
    /// The field; without it, only `count` is computed.
    ///
    /// ```swift
    /// query.field = "budget"
    /// ```
    public var field: String?
    /// `count`, `sum`, `avg`, `min`, `max`.
    ///
    /// ```swift
    /// query.functions = ["sum"]
    /// ```
    public var functions: [String]?
    /// The fields whose values make the groups.
    ///
    /// ```swift
    /// query.groupBy = ["destination"]
    /// ```
    public var groupBy: [String]?
    /// The predicate.
    ///
    /// ```swift
    /// query.where = "isFavorite == true"
    /// ```
    public var `where`: String?
    /// Values for the predicate's placeholders.
    ///
    /// ```swift
    /// query.arguments = ["year": 2025]
    /// ```
    public var arguments: [String: JSONValue]?

    /// An aggregate of nothing yet.
    ///
    /// ```swift
    /// let count = AggregateBody()
    /// ```
    public init() {}

    enum CodingKeys: String, CodingKey {
        case field, functions, groupBy = "group_by", `where`, arguments
    }
}

/// The body of `POST .../duplicates`: records that share the values of `by`.
///
/// ```swift
/// let query = DuplicatesBody(by: ["name", "startDate"])
/// ```
public struct DuplicatesBody: Sendable, Hashable, Codable {
    /// The fields whose equal values make duplicates.
    ///
    /// ```swift
    /// print(query.by)
    /// ```
    public var by: [String]
    /// The predicate.
    ///
    /// ```swift
    /// query.where = "budget > 0"
    /// ```
    public var `where`: String?
    /// Values for the predicate's placeholders.
    ///
    /// ```swift
    /// query.arguments = ["min": 0]
    /// ```
    public var arguments: [String: JSONValue]?
    /// At most this many groups.
    ///
    /// ```swift
    /// query.limit = 100
    /// ```
    public var limit: Int?

    /// Duplicates by `by`.
    ///
    /// ```swift
    /// let query = DuplicatesBody(by: ["email"])
    /// ```
    public init(by: [String]) { self.by = by }

    enum CodingKeys: String, CodingKey {
        case by, `where`, arguments, limit
    }

    /// Reads a query; `limit` must be a whole number from 0 up.
    ///
    /// ```swift
    /// let query = try JSONDecoder().decode(DuplicatesBody.self, from: body)
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        by = try c.decode([String].self, forKey: .by)
        `where` = try c.decodeIfPresent(String.self, forKey: .where)
        arguments = try c.decodeIfPresent([String: JSONValue].self, forKey: .arguments)
        limit = try c.decodeCount(forKey: .limit)
    }
}

/// The body of `POST .../export`: the records to stream, and as what.
///
/// ```swift
/// var query = ExportBody()
/// query.format = "csv"
/// ```
public struct ExportBody: Sendable, Hashable, Codable {
    /// The predicate.
    ///
    /// ```swift
    /// query.where = "budget > 1000"
    /// ```
    public var `where`: String?
    /// Values for the predicate's placeholders.
    ///
    /// ```swift
    /// query.arguments = ["min": 1000]
    /// ```
    public var arguments: [String: JSONValue]?
    /// The fields, in order.
    ///
    /// ```swift
    /// query.fields = ["id", "name"]
    /// ```
    public var fields: [String]?
    /// `ndjson` (the default) or `csv`.
    ///
    /// ```swift
    /// query.format = "ndjson"
    /// ```
    public var format: String?
    /// Refused here: an export job embeds related records.
    ///
    /// ```swift
    /// query.prefetch = nil
    /// ```
    public var prefetch: [String]?

    /// An export of every record as NDJSON.
    ///
    /// ```swift
    /// let all = ExportBody()
    /// ```
    public init() {}
}

/// A fetch's answer: its records.
///
/// ```swift
/// let page = try JSONDecoder().decode(RecordsAnswer.self, from: body)
/// ```
public struct RecordsAnswer: Sendable, Hashable, Codable {
    /// The records.
    ///
    /// ```swift
    /// print(page.records.count)
    /// ```
    public var records: [RecordObject]

    package init(records: [RecordObject]) { self.records = records }
}

/// A fetch's answer with `section_by`: the records by the section's value.
///
/// ```swift
/// let sections = try JSONDecoder().decode(SectionsAnswer.self, from: body)
/// ```
public struct SectionsAnswer: Sendable, Hashable, Codable {
    /// A section: its key, and its records.
    ///
    /// ```swift
    /// for s in sections.sections { print(s.key, s.records.count) }
    /// ```
    public struct Section: Sendable, Hashable, Codable {
        /// The section's value.
        ///
        /// ```swift
        /// print(section.key)
        /// ```
        public var key: JSONValue
        /// Its records.
        ///
        /// ```swift
        /// print(section.records.count)
        /// ```
        public var records: [RecordObject]

        package init(key: JSONValue, records: [RecordObject]) {
            self.key = key
            self.records = records
        }
    }

    /// The sections, in order.
    ///
    /// ```swift
    /// print(sections.sections.count)
    /// ```
    public var sections: [Section]

    package init(sections: [Section]) { self.sections = sections }
}

/// A fetch's answer with `"result": "count"`.
///
/// ```swift
/// let answer = try JSONDecoder().decode(CountAnswer.self, from: body)
/// ```
public struct CountAnswer: Sendable, Hashable, Codable {
    /// The number of records.
    ///
    /// ```swift
    /// print(answer.count)
    /// ```
    public var count: Int

    /// The answer of a count.
    ///
    /// ```swift
    /// let answer = CountAnswer(count: try await client.count(request))
    /// ```
    public init(count: Int) { self.count = count }
}

/// A fetch's answer with `"result": "identifiers"`.
///
/// ```swift
/// let answer = try JSONDecoder().decode(IdentifiersAnswer.self, from: body)
/// ```
public struct IdentifiersAnswer: Sendable, Hashable, Codable {
    /// The records' identifiers (a compound one as an array).
    ///
    /// ```swift
    /// print(answer.identifiers.first ?? .null)
    /// ```
    public var identifiers: [JSONValue]

    /// The answer of an identifiers fetch.
    ///
    /// ```swift
    /// let answer = IdentifiersAnswer(identifiers: try await client.identifiers(request))
    /// ```
    public init(identifiers: [JSONValue]) { self.identifiers = identifiers }
}

/// An event of a live fetch (`"watch": true`): the result again, after a
/// commit that changed it, with the history token it reflects.
///
/// ```swift
/// let event = try JSONDecoder().decode(WatchEvent.self, from: Data(line.utf8))
/// ```
public struct WatchEvent: Sendable, Hashable, Codable {
    /// The newest token the result reflects.
    ///
    /// ```swift
    /// print(event.token ?? "no history yet")
    /// ```
    public var token: String?
    /// The result: `{"records": [...]}`, `{"count": n}` or `{"identifiers": [...]}`.
    ///
    /// ```swift
    /// print(event.result["count"] ?? .null)
    /// ```
    public var result: JSONValue

    package init(token: String?, result: JSONValue) {
        self.token = token
        self.result = result
    }
}

/// An event of a live fetch with `"changes": true`: the first `result`,
/// then `changes` after each commit that changed it, or `history_expired`.
///
/// ```swift
/// let event = try JSONDecoder().decode(ChangeEvent.self, from: Data(line.utf8))
/// ```
public struct ChangeEvent: Sendable, Hashable, Codable {
    /// `result`, `changes`, `history_expired` or `entity_dropped` (the last
    /// event of a live fetch whose entity was dropped).
    ///
    /// ```swift
    /// if event.type == "history_expired" { print(event.message ?? "") }
    /// ```
    public var type: String
    /// The newest token the event reflects.
    ///
    /// ```swift
    /// print(event.token ?? "")
    /// ```
    public var token: String?
    /// The result (`result`).
    ///
    /// ```swift
    /// print(event.records?.count ?? 0)
    /// ```
    public var records: [RecordObject]?
    /// Records that entered the result (`changes`).
    ///
    /// ```swift
    /// print(event.inserted?.count ?? 0)
    /// ```
    public var inserted: [RecordObject]?
    /// Records in it whose fetched fields changed (`changes`).
    ///
    /// ```swift
    /// print(event.updated?.count ?? 0)
    /// ```
    public var updated: [RecordObject]?
    /// Identifiers that left it (`changes`).
    ///
    /// ```swift
    /// print(event.deleted ?? [])
    /// ```
    public var deleted: [JSONValue]?
    /// Why (`history_expired`).
    ///
    /// ```swift
    /// print(event.message ?? "")
    /// ```
    public var message: String?

    /// The event that ends a live fetch whose history was pruned under it.
    package static func historyExpired(_ message: String) -> ChangeEvent {
        ChangeEvent(type: "history_expired", message: message)
    }

    package init(
        type: String, token: String? = nil, records: [RecordObject]? = nil, inserted: [RecordObject]? = nil,
        updated: [RecordObject]? = nil, deleted: [JSONValue]? = nil, message: String? = nil
    ) {
        self.type = type
        self.token = token
        self.records = records
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.message = message
    }
}

/// `POST .../aggregate`'s answer: a row per group, each with its group's
/// values (`group`) and a value per statistic (`count`, `avg`, ...).
///
/// ```swift
/// let answer = try JSONDecoder().decode(AggregateAnswer.self, from: body)
/// ```
public struct AggregateAnswer: Sendable, Hashable, Codable {
    /// The rows.
    ///
    /// ```swift
    /// for row in answer.rows { print(row["group"] ?? .null, row["avg"] ?? .null) }
    /// ```
    public var rows: [[String: JSONValue]]

    /// The answer of an aggregate: its rows.
    ///
    /// ```swift
    /// let answer = AggregateAnswer(rows: [["count": 3]])
    /// ```
    public init(rows: [[String: JSONValue]]) { self.rows = rows }
}

/// `POST .../duplicates`'s answer: the groups of records that share values.
///
/// ```swift
/// let answer = try JSONDecoder().decode(DuplicatesAnswer.self, from: body)
/// ```
public struct DuplicatesAnswer: Sendable, Hashable, Codable {
    /// The groups.
    ///
    /// ```swift
    /// print(answer.groups.count)
    /// ```
    public var groups: [DuplicateGroup]

    package init(groups: [DuplicateGroup]) { self.groups = groups }
}

/// Records that share the values of some fields.
///
/// ```swift
/// group.values          // ["Week in Paris", "2025-04-01"]
/// group.identifiers     // ["T002", "T004"], first stored first
/// ```
public struct DuplicateGroup: Sendable, Hashable, Codable {
    /// The shared values, one per field asked for.
    ///
    /// ```swift
    /// print(group.values.map(\.text).joined(separator: ", "))
    /// ```
    public var values: [JSONValue]
    /// The identifiers of the group's records, in storage order.
    ///
    /// ```swift
    /// let extra = group.identifiers.dropFirst()     // all but the first stored
    /// ```
    public var identifiers: [JSONValue]

    package init(values: [JSONValue], identifiers: [JSONValue]) {
        self.values = values
        self.identifiers = identifiers
    }
}

/// An error as the daemon answers it: `{"error": {"code", "message", "position"}}`.
///
/// ```swift
/// let failure = try JSONDecoder().decode(ErrorAnswer.self, from: body)
/// print(failure.error.code, failure.error.message)
/// ```
public struct ErrorAnswer: Sendable, Hashable, Codable {
    /// What went wrong.
    ///
    /// ```swift
    /// print(failure.error.message)
    /// ```
    public struct Failure: Sendable, Hashable, Codable {
        /// The error's code (`invalid_argument`, `not_found`, ...; docs/api.md).
        ///
        /// ```swift
        /// if failure.error.code == "conflict" { retry() }
        /// ```
        public var code: String
        /// Why, in a sentence.
        ///
        /// ```swift
        /// print(failure.error.message)
        /// ```
        public var message: String
        /// For a predicate: the 1-based character where it went wrong.
        ///
        /// ```swift
        /// if let at = failure.error.position { print("at character", at) }
        /// ```
        public var position: Int?
        /// For a refused save: every failing change, by index.
        ///
        /// ```swift
        /// for change in failure.error.changes ?? [] { print(change.index, change.code) }
        /// ```
        public var changes: [ChangeFailure]?

        package init(code: String, message: String, position: Int?, changes: [ChangeFailure]? = nil) {
            self.code = code
            self.message = message
            self.position = position
            self.changes = changes
        }
    }

    /// The error.
    ///
    /// ```swift
    /// print(failure.error.code)
    /// ```
    public var error: Failure

    package init(error: Failure) { self.error = error }
}

/// `GET /v1/watches`: the watched folders, and what each holds.
///
/// ```swift
/// for w in try await client.watches() { print(w.path, w.pending) }
/// ```
public struct Watch: Sendable, Hashable, Codable {
    /// The folder.
    ///
    /// ```swift
    /// print(watch.path)
    /// ```
    public var path: String
    /// The store its files go to.
    ///
    /// ```swift
    /// print(watch.store)
    /// ```
    public var store: String
    /// The entity.
    ///
    /// ```swift
    /// print(watch.entity)
    /// ```
    public var entity: String
    /// `auto`, `csv`, `tsv`, `ndjson` or `json`.
    ///
    /// ```swift
    /// print(watch.format)
    /// ```
    public var format: String
    /// The conflict policy of its imports.
    ///
    /// ```swift
    /// print(watch.onConflict)
    /// ```
    public var onConflict: String
    /// When its imports fail for their rejects.
    ///
    /// ```swift
    /// print(watch.maxRejects)
    /// ```
    public var maxRejects: String
    /// `check` or `defer`.
    ///
    /// ```swift
    /// print(watch.references)
    /// ```
    public var references: String
    /// Whether an imported file is deleted (else moved to `.done`).
    ///
    /// ```swift
    /// print(watch.deleteAfter)
    /// ```
    public var deleteAfter: Bool
    /// Files waiting or importing.
    ///
    /// ```swift
    /// print(watch.pending)
    /// ```
    public var pending: Int
    /// Files in `.done`.
    ///
    /// ```swift
    /// print(watch.done)
    /// ```
    public var done: Int
    /// Files in `.failed`.
    ///
    /// ```swift
    /// print(watch.failed)
    /// ```
    public var failed: Int

    package init(
        path: String, store: String, entity: String, format: String, onConflict: String, maxRejects: String,
        references: String, deleteAfter: Bool, pending: Int, done: Int, failed: Int
    ) {
        self.path = path
        self.store = store
        self.entity = entity
        self.format = format
        self.onConflict = onConflict
        self.maxRejects = maxRejects
        self.references = references
        self.deleteAfter = deleteAfter
        self.pending = pending
        self.done = done
        self.failed = failed
    }

    enum CodingKeys: String, CodingKey {
        case path, store, entity, format, onConflict = "on_conflict", maxRejects = "max_rejects", references
        case deleteAfter = "delete_after", pending, done, failed
    }
}

/// `GET /v1/watches`'s answer.
///
/// ```swift
/// let list = try JSONDecoder().decode(WatchList.self, from: body)
/// ```
public struct WatchList: Sendable, Hashable, Codable {
    /// The watched folders.
    ///
    /// ```swift
    /// print(list.watches.count)
    /// ```
    public var watches: [Watch]

    /// A list of `watches`, as the daemon answers it.
    ///
    /// ```swift
    /// let list = WatchList(watches: try await client.watches())
    /// ```
    public init(watches: [Watch]) { self.watches = watches }
}

/// A line of `GET /v1/jobs/ID/rejects`: a record an import refused, where
/// it stood in the input, and why.
///
/// ```swift
/// for try await r in client.rejects(of: job.id) { print("line \(r.line): \(r.reason)") }
/// ```
public struct RejectedRecord: Sendable, Hashable, Codable {
    /// The input's line the record starts on.
    ///
    /// ```swift
    /// print(r.line)
    /// ```
    public var line: Int
    /// The field at fault, if one is.
    ///
    /// ```swift
    /// print(r.field ?? "the record")
    /// ```
    public var field: String?
    /// Why, in a sentence.
    ///
    /// ```swift
    /// print(r.reason)
    /// ```
    public var reason: String
    /// The value refused, if one was.
    ///
    /// ```swift
    /// print(r.value ?? "")
    /// ```
    public var value: String?

    package init(line: Int, field: String?, reason: String, value: String?) {
        self.line = line
        self.field = field
        self.reason = reason
        self.value = value
    }
}
