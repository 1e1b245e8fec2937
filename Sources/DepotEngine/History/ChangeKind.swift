/// What a change did to a record.
public enum ChangeKind: String, Sendable, Hashable, Codable {
    /// The record was new.
    case insert
    /// Some of the record's fields changed; the change names them.
    case update
    /// The record was deleted; the change keeps its tombstone.
    case delete
}
