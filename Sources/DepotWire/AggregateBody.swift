import Foundation

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
