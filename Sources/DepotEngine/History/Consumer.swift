/// A named, durable cursor over a store's history (DESIGN §11): one per
/// downstream system, as PostgreSQL's replication slots are. Kept in the
/// store file (`depot_consumers`); pruning never removes a transaction that
/// an active consumer has not acknowledged.
public struct Consumer: Sendable, Hashable {
    /// Whether a consumer still holds the history back.
    public enum State: String, Sendable, Hashable {
        /// It holds back pruning at its token.
        case active
        /// `history_max_retention` overrode it and its transactions were
        /// pruned; reading it answers `history_expired` until it is reset.
        case lost
    }

    /// Where a new or reset consumer starts.
    public enum Start: Sendable, Hashable {
        /// After the newest transaction: only what commits from now on.
        case now
        /// Before the oldest kept transaction: everything the store still has.
        case beginning
        /// After this token, as `history?after=` would read.
        case after(HistoryToken)

        /// Reads `now`, `beginning` or a token.
        ///
        /// - Throws: ``DepotError/Code/invalidToken`` for anything else.
        public static func parse(_ text: String) throws -> Start {
            switch text {
            case "now": return .now
            case "beginning": return .beginning
            default:
                guard let token = HistoryToken(text) else {
                    throw DepotError(
                        .invalidToken,
                        "\(JSONText.quoted(text)) is not where a consumer can start: "
                            + "use \"now\", \"beginning\" or a history token")
                }
                try token.requireWhole(for: "a consumer's start")
                return .after(token)
            }
        }
    }

    /// The consumer's name, unique in its store.
    public var name: String
    /// The last acknowledged transaction: the consumer reads after it.
    public var token: HistoryToken
    /// Transactions after ``token`` (committed, not yet acknowledged).
    public var lagTransactions: Int
    /// The age in seconds of the oldest unacknowledged transaction; 0 when
    /// the consumer is up to date.
    public var lagSeconds: Double
    /// When ``token`` was last moved (by an ack or a reset), or created.
    public var acknowledgedAt: String
    /// Whether it still holds the history back.
    public var state: State

    package init(
        name: String, token: HistoryToken, lagTransactions: Int, lagSeconds: Double, acknowledgedAt: String,
        state: State
    ) {
        self.name = name
        self.token = token
        self.lagTransactions = lagTransactions
        self.lagSeconds = lagSeconds
        self.acknowledgedAt = acknowledgedAt
        self.state = state
    }
}
