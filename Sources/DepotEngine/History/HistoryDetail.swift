/// What an entity's history keeps of each change (DESIGN §11), chosen with
/// `history =` in its `[[store.entity]]`.
public enum HistoryDetail: String, Sendable, Hashable, CaseIterable {
    /// For an update the names of the changed fields, for a delete the
    /// tombstone (the identifier and the `preserve_on_delete` fields).
    case fields
    /// Also the values: an insert carries `new`, every field; an update
    /// carries `old` and `new`, the changed fields only; a delete carries
    /// `old`, every field.
    case values
}
