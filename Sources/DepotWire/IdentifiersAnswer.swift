import Foundation

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
