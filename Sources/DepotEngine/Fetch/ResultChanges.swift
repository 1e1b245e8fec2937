/// What changed in a fetch's result between two history tokens (DESIGN §11):
/// the `changes` event of a live fetch with `"changes": true`.
public struct ResultChanges: Sendable, Hashable {
    /// The newest transaction these changes include.
    public var token: HistoryToken?
    /// Records that entered the result: new, or now matching the predicate.
    public var inserted: RecordSet
    /// Records in the result whose fetched fields changed.
    public var updated: RecordSet
    /// Identifiers that left the result: deleted, or no longer matching.
    public var deleted: [Identifier]

    /// Whether nothing in the result changed.
    public var isEmpty: Bool { inserted.count == 0 && updated.count == 0 && deleted.isEmpty }
}
