/// What to fetch: the `FetchDescriptor` analog.
///
/// For example:
///
/// ```swift
/// var fetch = FetchDescriptor(entity: "Trip", where: "budget > 1000 AND destination != nil")
/// fetch.sort = [SortDescriptor("destination"), SortDescriptor("budget", descending: true)]
/// fetch.limit = 20
/// fetch.fields = ["id", "destination", "budget"]
/// let page = try await store.reader.fetch(fetch)
/// ```
public struct FetchDescriptor: Sendable, Hashable {
    /// The entity to fetch.
    public var entity: String
    /// A predicate in NSPredicate syntax; `nil` matches every record.
    public var predicate: String?
    /// Values for the predicate's `$name` placeholders.
    public var arguments: [String: Value]
    /// The order of the results; ties keep storage order.
    public var sort: [SortDescriptor]
    /// At most this many results.
    public var limit: Int?
    /// Skip this many results first.
    public var offset: Int?
    /// Fetch only these fields (`propertiesToFetch`); `nil` fetches all.
    public var fields: [String]?
    /// Group results by this field; it becomes the primary sort.
    public var sectionBy: String?

    /// Creates a descriptor.
    public init(entity: String, where predicate: String? = nil, arguments: [String: Value] = [:],
                sort: [SortDescriptor] = [], limit: Int? = nil, offset: Int? = nil,
                fields: [String]? = nil, sectionBy: String? = nil) {
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

/// One key of a fetch's order.
///
/// NULLs come first in ascending order and last in descending order unless
/// ``nulls`` says otherwise.
public struct SortDescriptor: Sendable, Hashable {
    /// Where NULLs go.
    public enum NullsOrder: String, Sendable, Hashable, Codable {
        /// Before every value.
        case first
        /// After every value.
        case last
    }

    /// The field to sort by.
    public var field: String
    /// Whether larger values come first.
    public var descending: Bool
    /// Where NULLs go; `nil` for the default of the direction.
    public var nulls: NullsOrder?

    /// Creates a sort key.
    public init(_ field: String, descending: Bool = false, nulls: NullsOrder? = nil) {
        self.field = field
        self.descending = descending
        self.nulls = nulls
    }

    /// Parses `field` or `-field` (descending), as the API and `depotctl` write it.
    public init(parsing text: String, nulls: NullsOrder? = nil) {
        if text.hasPrefix("-") {
            self.init(String(text.dropFirst()), descending: true, nulls: nulls)
        } else {
            self.init(text.hasPrefix("+") ? String(text.dropFirst()) : text, nulls: nulls)
        }
    }

    /// The nulls order in force.
    public var effectiveNulls: NullsOrder { nulls ?? (descending ? .last : .first) }
}

/// Fetched records: the fields fetched and one row of values per record.
public struct RecordSet: Sendable, Hashable {
    /// The fields of each row, in order.
    public var fields: [Field]
    /// The records, each one value per field.
    public var rows: [[Value]]

    /// The number of records.
    public var count: Int { rows.count }

    /// The value of `field` in row `row`, or `nil` when the field was not fetched.
    public func value(_ field: String, row: Int) -> Value? {
        fields.firstIndex { $0.name == field }.map { rows[row][$0] }
    }

    /// Row `row` as one JSON object; `json` fields are embedded as JSON.
    public func jsonObject(row: Int) -> String {
        var out = "{"
        for (i, field) in fields.enumerated() {
            if i > 0 { out.append(",") }
            JSONText.appendQuoted(field.name, to: &out)
            out.append(":")
            JSONText.append(rows[row][i], rawJSON: field.type == .json, to: &out)
        }
        out.append("}")
        return out
    }
}

/// Records sharing one value of the section field.
public struct RecordSection: Sendable, Hashable {
    /// The section field's value.
    public var key: Value
    /// The section's records.
    public var records: RecordSet
}
