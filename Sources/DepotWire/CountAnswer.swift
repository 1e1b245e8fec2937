import Foundation

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
