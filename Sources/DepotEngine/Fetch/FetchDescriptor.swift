/// What to fetch: the `FetchDescriptor` analog.
///
/// For example:
///
/// ```swift
/// var fetch = FetchDescriptor(entity: "Trip", where: "budget > 1000 AND destination != nil")
/// fetch.sort = [SortDescriptor("destination"), SortDescriptor("budget", descending: true)]
/// fetch.limit = 20
/// fetch.fields = ["id", "destination", "budget"]
/// // With relationships (DESIGN §12): fetch.prefetch = ["customer", "lines"]
/// let page = try await store.reader.fetch(fetch)
/// ```
public struct FetchDescriptor: Sendable, Hashable {
    /// The entity to fetch.
    public var entity: String
    /// A predicate in NSPredicate syntax; `nil` matches every record.
    public var predicate: String?
    /// Values for the predicate's `$name` placeholders.
    public var arguments: [String: Value]
    /// The order of the results. Records equal in every key come in one
    /// fixed order, the backend's (an SQLite store's storage order, a
    /// PostgreSQL store's identifier order); without a sort, in storage order.
    public var sort: [SortDescriptor]
    /// At most this many results.
    public var limit: Int?
    /// Skip this many results first.
    public var offset: Int?
    /// Fetch only these fields (`propertiesToFetch`); `nil` fetches all.
    public var fields: [String]?
    /// Group results by this field; it becomes the primary sort.
    public var sectionBy: String?
    /// Relationships whose records are embedded in each result (DESIGN §12,
    /// `relationshipKeyPathsForPrefetching`), dotted for nesting
    /// (`lines.product`); `fields` may also name their fields (`customer.name`).
    public var prefetch: [String] = []
    /// Values computed for each record (DESIGN §17), sent after `fields`
    /// under their names: `ComputedField("total", "price * qty")`. With
    /// them alone (`fields` nil or empty), the identifier is sent too.
    public var computed: [ComputedField] = []
    /// Keyset paging (DESIGN §4): the records after the one whose values of
    /// the order's keys are these, the sort's fields and then the
    /// identifier's fields not among them (``keys``). Each page starts from
    /// the last record of the one before, as fast at any depth as the first;
    /// it needs a ``sort``.
    ///
    /// ```swift
    /// var page = FetchDescriptor(entity: "Trip", sort: [SortDescriptor("budget")], limit: 100)
    /// let first = try await store.reads.fetch(page)
    /// page.after = first.lastValues(of: ["budget", "id"])   // the keys: budget, then the identifier
    /// let second = try await store.reads.fetch(page)
    /// ```
    public var after: [Value]?
    /// Exactly the records of these identifiers (each its fields' values,
    /// in the identifier's order), those of them that exist and match the
    /// predicate: a processor's batch, a related page. At most
    /// ``maxIdentifiers``.
    public var identifiers: [[Value]]?

    /// Creates a descriptor.
    public init(
        entity: String, where predicate: String? = nil, arguments: [String: Value] = [:],
        sort: [SortDescriptor] = [], limit: Int? = nil, offset: Int? = nil,
        fields: [String]? = nil, sectionBy: String? = nil
    ) {
        self.entity = entity
        self.predicate = predicate
        self.arguments = arguments
        self.sort = sort
        self.limit = limit
        self.offset = offset
        self.fields = fields
        self.sectionBy = sectionBy
    }
}

extension FetchDescriptor {
    /// The most identifiers a fetch of ``identifiers`` takes.
    public static let maxIdentifiers = 10_000

    /// The fields of the order's keys, which ``after`` gives values of: the
    /// sort's fields, then the identifier's fields not among them.
    package func keys(of entity: EntitySchema) -> [String] {
        let sorted = sort.map(\.field)
        return sorted + entity.identifier.filter { !sorted.contains($0) }
    }

    /// The records it selects, its fields, without its sort, page or
    /// sections: what an export or an enumeration reads, in storage order.
    package var wholeSelection: FetchDescriptor {
        var d = self
        d.sort = []
        d.limit = nil
        d.offset = nil
        d.sectionBy = nil
        return d
    }
}

/// A value a fetch computes for each record (DESIGN §17): an expression in
/// the predicates' syntax, sent under `name`.
///
/// ```swift
/// fetch.computed = [ComputedField("total", "price * qty")]
/// ```
public struct ComputedField: Sendable, Hashable {
    public var name: String
    public var expression: String

    public init(_ name: String, _ expression: String) {
        self.name = name
        self.expression = expression
    }
}
