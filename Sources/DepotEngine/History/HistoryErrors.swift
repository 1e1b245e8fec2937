/// The errors of history reads, consumers and pruning, in one place for
/// both backends (an SQLite store and a PostgreSQL one say the same).
package enum HistoryErrors {
    /// Reading after `after`, whose following transactions were pruned through `pruned`.
    package static func expired(store: String, after: Int64, pruned: Int64) -> DepotError {
        DepotError(
            .historyExpired,
            "the history of store \(JSONText.quoted(store)) after token "
                + "\(after) was pruned (the transactions up to token \(pruned) are gone); read the current records again and "
                + "follow the history from its latest token")
    }

    /// Reading after a token the store never issued.
    package static func neverIssued(store: String, token: Int64, issued: Int64) -> DepotError {
        DepotError(
            .invalidToken,
            "store \(JSONText.quoted(store)) never issued token \(token) "
                + "(its latest is \(issued)); was the token taken from another store?")
    }

    /// Acknowledging a token the store never issued.
    package static func acknowledgedNeverIssued(store: String, token: HistoryToken, issued: Int64) -> DepotError {
        DepotError(
            .invalidToken,
            "store \(JSONText.quoted(store)) never issued token \(token) "
                + "(its latest is \(issued)); acknowledge the token of a transaction the consumer read")
    }

    /// Pruning before a token the store never issued.
    package static func pruneNeverIssued(store: String, token: HistoryToken, issued: Int64) -> DepotError {
        DepotError(
            .invalidToken,
            "store \(JSONText.quoted(store)) never issued token "
                + "\(token.id) (its latest is \(issued))")
    }

    /// Creating a consumer whose name is taken.
    package static func consumerExists(store: String, name: String) -> DepotError {
        DepotError(
            .conflict,
            "store \(JSONText.quoted(store)) already has a consumer "
                + "\(JSONText.quoted(name)); reset it to move it, or drop it first")
    }

    /// Naming a consumer the store does not have.
    package static func unknownConsumer(store: String, name: String, names: [String]) -> DepotError {
        DepotError(
            .unknownConsumer,
            "store \(JSONText.quoted(store)) has no consumer "
                + "\(JSONText.quoted(name))" + DepotError.suggestion(for: name, in: names))
    }

    /// Reading a consumer that `history_max_retention` made lost.
    package static func lost(consumer: String, store: String) -> DepotError {
        DepotError(
            .historyExpired,
            "consumer \(JSONText.quoted(consumer)) of store "
                + "\(JSONText.quoted(store)) is lost: history_max_retention pruned transactions it had not "
                + "acknowledged; reset it (depotctl consumer reset \(store) \(consumer)) and read the current records again"
        )
    }
}
