/// What a prune did, and what stopped it.
public struct PruneOutcome: Sendable, Hashable {
    /// Transactions deleted.
    public var deleted: Int
    /// The active consumer that stopped the prune before where it was asked
    /// to reach, with its token (the prune kept every transaction after it).
    public var heldBackBy: (consumer: String, token: HistoryToken)? {
        get { holder.map { ($0.consumer, $0.token) } }
        set { holder = newValue.map { Holder(consumer: $0.consumer, token: $0.token) } }
    }
    /// Consumers that `history_max_retention` marked `lost` in this prune.
    public var lost: [String]

    private var holder: Holder?
    private struct Holder: Sendable, Hashable {
        var consumer: String
        var token: HistoryToken
    }

    init(deleted: Int = 0, lost: [String] = []) {
        self.deleted = deleted
        self.lost = lost
    }
}
