/// What to fetch (the `FetchDescriptor` of DESIGN §4, over the socket): the
/// store and entity, a predicate with its arguments, a sort, a page, the
/// fields, the related records to embed.
///
/// ```swift
/// var request = FetchRequest(store: "travel", entity: "Trip", where: "budget > $min", arguments: ["min": 1000])
/// request.sort = ["destination", "-budget"]     // a leading "-" sorts descending
/// request.fields = ["id", "name", "budget"]
/// request.limit = 50
/// ```
public struct FetchRequest: Sendable, Hashable {
    /// The store's name.
    ///
    /// ```swift
    /// var r = FetchRequest(store: "travel", entity: "Trip"); r.store = "travel-archive"
    /// ```
    public var store: String
    /// The entity's name.
    ///
    /// ```swift
    /// var r = FetchRequest(store: "shop", entity: "Order"); r.entity = "Customer"
    /// ```
    public var entity: String
    /// The predicate (docs/predicates.md); `nil` selects every record.
    ///
    /// ```swift
    /// request.predicate = "startDate >= '2025-01-01' AND name CONTAINS[cd] $q"
    /// ```
    public var predicate: String?
    /// Values for the predicate's `$name` placeholders.
    ///
    /// ```swift
    /// request.arguments = ["q": "paris", "min": 1000]
    /// ```
    public var arguments: [String: JSONValue]
    /// Fields or key paths to sort by, a leading `-` for descending.
    ///
    /// ```swift
    /// request.sort = ["-startDate", "name"]
    /// ```
    public var sort: [String]
    /// Where nulls go in the sort: `.first` or `.last`; `nil` as SQL does
    /// (first ascending, last descending).
    ///
    /// ```swift
    /// request.nulls = .last
    /// ```
    public var nulls: NullsOrder?
    /// At most this many records.
    ///
    /// ```swift
    /// request.limit = 100
    /// ```
    public var limit: Int?
    /// Skip this many records first.
    ///
    /// ```swift
    /// request.offset = 200     // the third page of 100
    /// ```
    public var offset: Int?
    /// Only these fields (and key paths such as `customer.name`); `nil` for every field.
    ///
    /// ```swift
    /// request.fields = ["id", "name", "customer.name"]
    /// ```
    public var fields: [String]?
    /// Values computed for each record (DESIGN §17), sent after `fields` under their names.
    ///
    /// ```swift
    /// request.computed = [ComputedFetchField(name: "total", expression: "price * qty")]
    /// ```
    public var computed: [ComputedFetchField] = []
    /// Relationships whose records each record embeds (DESIGN §12).
    ///
    /// ```swift
    /// request.prefetch = ["customer", "lines"]     // each order embeds its customer and lines
    /// ```
    public var prefetch: [String]
    /// A field whose values split the result into sections (``DepotClient/fetchJSON(_:)``).
    ///
    /// ```swift
    /// request.sectionBy = "destination"
    /// ```
    public var sectionBy: String?
    /// Keyset paging (DESIGN §4): the page starts after the record whose
    /// values of the order's keys are these (the last record of the page
    /// before: its ``sort`` fields, then its identifier's fields not among
    /// them). Needs a ``sort``; as fast at any depth, where an ``offset``
    /// reads what it skips.
    ///
    /// ```swift
    /// var request = FetchRequest(store: "travel", entity: "Trip", sort: ["-budget"], limit: 100)
    /// let first = try await client.fetch(request)
    /// request.after = [first.last?["budget"] ?? .null, first.last?["id"] ?? .null]
    /// let second = try await client.fetch(request)
    /// ```
    public var after: [JSONValue]?
    /// Exactly the records of these identifiers (a value each, or an array
    /// of a compound identifier's values), at most 10,000.
    ///
    /// ```swift
    /// request.identifiers = ["t1", "t7"]
    /// ```
    public var identifiers: [JSONValue]?

    /// Where nulls sort.
    ///
    /// ```swift
    /// FetchRequest(store: "travel", entity: "Trip", sort: ["endDate"], nulls: .first)
    /// ```
    public enum NullsOrder: String, Sendable, Hashable {
        /// Before every value.
        ///
        /// ```swift
        /// FetchRequest(store: "travel", entity: "Trip", sort: ["-endDate"], nulls: .first)     // open trips on top
        /// ```
        case first
        /// After every value.
        ///
        /// ```swift
        /// FetchRequest(store: "travel", entity: "Trip", sort: ["destination"], nulls: .last)
        /// ```
        case last
    }

    /// A request; everything but the store and the entity is optional.
    ///
    /// ```swift
    /// let latest = FetchRequest(store: "travel", entity: "Trip", sort: ["-startDate"], limit: 5)
    /// ```
    public init(
        store: String, entity: String, where predicate: String? = nil,
        arguments: [String: JSONValue] = [:], sort: [String] = [], nulls: NullsOrder? = nil,
        limit: Int? = nil, offset: Int? = nil, fields: [String]? = nil, prefetch: [String] = []
    ) {
        self.store = store
        self.entity = entity
        self.predicate = predicate
        self.arguments = arguments
        self.sort = sort
        self.nulls = nulls
        self.limit = limit
        self.offset = offset
        self.fields = fields
        self.prefetch = prefetch
    }

    /// The fetch body of the control API (docs/api.md, "Fetch").
    package func body(result: String? = nil) -> FetchBody {
        var body = FetchBody()
        body.where = predicate
        if !arguments.isEmpty { body.arguments = arguments }
        if !sort.isEmpty { body.sort = sort }
        body.nulls = nulls?.rawValue
        body.limit = limit
        body.offset = offset
        body.fields = fields
        if !computed.isEmpty { body.computed = computed }
        if !prefetch.isEmpty { body.prefetch = prefetch }
        body.sectionBy = sectionBy
        body.after = after
        body.identifiers = identifiers
        body.result = result
        return body
    }

    /// `/v1/stores/S/entities/E/ACTION`.
    func path(_ action: String) -> String { DepotClient.entityPath(store, entity, action) }
}
