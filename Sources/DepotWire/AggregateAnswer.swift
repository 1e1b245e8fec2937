import Foundation

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
