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
