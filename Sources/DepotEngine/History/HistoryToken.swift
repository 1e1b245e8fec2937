/// An opaque string that orders a store's history transactions.
///
/// Clients keep the token of the last transaction they saw and ask for the
/// history after it. Tokens of one store compare in commit order; a token is
/// never issued twice, even after pruning.
///
/// For example:
///
/// ```swift
/// let page = try await store.reader.history(after: HistoryToken("41"))
/// let next = page.last?.token  // ask after this one next time
/// ```
public struct HistoryToken: Sendable, Hashable, Comparable, LosslessStringConvertible, Codable {
    /// The transaction's row id in `depot_transactions`.
    package let id: Int64

    package init(_ id: Int64) { self.id = id }

    /// Parses a token as the API shows it; `nil` when it is not one.
    public init?(_ description: String) {
        guard let id = Int64(description), id >= 0 else { return nil }
        self.id = id
    }

    /// The token as clients see it.
    public var description: String { String(id) }

    /// Whether `lhs` was committed before `rhs`.
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.id < rhs.id }

    /// Decodes a token from its string.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let token = HistoryToken(text) else {
            throw DepotError(.invalidToken, "\(JSONText.quoted(text)) is not a history token")
        }
        self = token
    }

    /// Encodes the token as its string.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    /// Parses a token a user typed.
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` saying what a token looks like.
    public static func parse(_ text: String) throws -> HistoryToken {
        guard let token = HistoryToken(text) else {
            throw DepotError(.invalidToken, "\(JSONText.quoted(text)) is not a history token; use the token "
                + "of a transaction that the history listing showed")
        }
        return token
    }
}
