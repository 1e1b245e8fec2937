public import DepotWire

/// What a prune did, and what stopped it.
///
/// Its counts are ``Counters`` (the job record's type): `deleted`, the
/// transactions deleted, and `saves`, the saves the deletes took (see
/// ``StoreConfiguration/historyPruneStep``); read as `outcome.deleted`.
@dynamicMemberLookup
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

    /// Transactions deleted (`deleted`), and the saves that took (`saves`).
    public var counters = Counters()
    /// The active consumer that stopped the prune before where it was asked
    /// to reach, if one did.
    public var heldBackBy: HeldBack?
    /// Consumers that `history_max_retention` marked `lost` in this prune.
    public var lost: [String]

    package init(lost: [String] = []) {
        self.lost = lost
    }

    /// A count, as `outcome.deleted`.
    public subscript<T>(dynamicMember path: WritableKeyPath<Counters, T>) -> T {
        get { counters[keyPath: path] }
        set { counters[keyPath: path] = newValue }
    }
}
