/// What a prune did, and what stopped it.
public struct PruneOutcome: Sendable, Hashable {
    /// The active consumer that stopped a prune, and its token: the prune
    /// kept every transaction after it.
    public struct HeldBack: Sendable, Hashable {
        /// The consumer's name.
        public var consumer: String
        /// The last token it acknowledged.
        public var token: HistoryToken

        package init(consumer: String, token: HistoryToken) {
            self.consumer = consumer
            self.token = token
        }
    }

    /// Transactions deleted.
    public var deleted: Int
    /// The active consumer that stopped the prune before where it was asked
    /// to reach, if one did.
    public var heldBackBy: HeldBack?
    /// Consumers that `history_max_retention` marked `lost` in this prune.
    public var lost: [String]
    /// The saves the deletes took (see ``StoreConfiguration/historyPruneStep``).
    public var saves = 0

    package init(deleted: Int = 0, lost: [String] = []) {
        self.deleted = deleted
        self.lost = lost
    }
}
