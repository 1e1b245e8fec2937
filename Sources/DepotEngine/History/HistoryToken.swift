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
    /// Inside a transaction that a page cut (`T.K`): how many of its
    /// changes were read; 0 for a whole transaction (`T`). Issue #35: a page
    /// holds at most so many changes, so one transaction may take several.
    package let change: Int

    package init(_ id: Int64) {
        self.id = id
        self.change = 0
    }

    package init(_ id: Int64, change: Int) {
        self.id = id
        self.change = change
    }

    /// Parses a token as the API shows it (`41`, or `41.10000` inside a
    /// transaction); `nil` when it is not one.
    public init?(_ description: String) {
        let parts = description.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let id = Int64(parts[0]), id >= 0 else { return nil }
        if parts.count == 2 {
            guard let change = Int(parts[1]), change > 0, id > 0 else { return nil }
            self.change = change
        } else {
            self.change = 0
        }
        self.id = id
    }

    /// Whether it names a whole transaction, not a place inside one.
    public var isWhole: Bool { change == 0 }

    /// The token as clients see it.
    public var description: String { change == 0 ? String(id) : "\(id).\(change)" }

    /// Whether `lhs` comes before `rhs` in the history: a place inside a
    /// transaction comes before the transaction's own (whole) token.
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool {
        (lhs.id, lhs.change == 0 ? Int.max : lhs.change) < (rhs.id, rhs.change == 0 ? Int.max : rhs.change)
    }

    /// The transactions wholly read before this place: all before a place
    /// inside a transaction, up to and with a whole one.
    package var wholeThrough: Int64 { change == 0 ? id : id - 1 }

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

    /// Throws unless the token names a whole transaction: a consumer's
    /// acknowledgement, a prune and a live fetch's `since` take whole ones.
    package func requireWhole(for purpose: String) throws {
        guard isWhole else {
            throw DepotError(
                .invalidToken,
                "\(JSONText.quoted(description)) is a place inside transaction \(id), "
                    + "which a page cut; \(purpose) takes a whole transaction's token, such as \(id) once its last part is read"
            )
        }
    }

    /// Parses a token a user typed that must name a whole transaction.
    public static func parseWhole(_ text: String, for purpose: String) throws -> HistoryToken {
        let token = try parse(text)
        try token.requireWhole(for: purpose)
        return token
    }

    /// Parses a token a user typed.
    ///
    /// - Throws: ``DepotError/Code/invalidToken`` saying what a token looks like.
    public static func parse(_ text: String) throws -> HistoryToken {
        guard let token = HistoryToken(text) else {
            throw DepotError(
                .invalidToken,
                "\(JSONText.quoted(text)) is not a history token; use the token "
                    + "of a transaction that the history listing showed")
        }
        return token
    }
}
