import Foundation

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
    /// Keyset paging (DESIGN §4): the next page starts after the record
    /// whose values of the order's keys are these: the last record of the
    /// page before, its `sort` fields, then its identifier's fields not
    /// among them. It needs a `sort`; a page is as fast at any depth.
    ///
    /// ```swift
    /// query.sort = ["-budget"]
    /// query.after = [1200.5, "t17"]   // the last page's last budget and id
    /// ```
    public var after: [JSONValue]?
    /// Exactly these records: each an identifier (a value, or an array of
    /// a compound identifier's values), at most 10,000.
    ///
    /// ```swift
    /// query.identifiers = ["t1", "t7"]
    /// ```
    public var identifiers: [JSONValue]?
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
        case changes, since, after, identifiers
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
        after = try c.decodeIfPresent([JSONValue].self, forKey: .after)
        identifiers = try c.decodeIfPresent([JSONValue].self, forKey: .identifiers)
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
        try c.encodeIfPresent(after, forKey: .after)
        try c.encodeIfPresent(identifiers, forKey: .identifiers)
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
