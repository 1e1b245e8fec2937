import Foundation

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
