

/// One record touched by a transaction.
public struct HistoryChange: Sendable, Hashable {
    /// The record's entity.
    public var entity: String
    /// The record's identifier as JSON text: a value, or an array for a compound key.
    public var identifier: String
    /// What happened to the record.
    public var kind: ChangeKind
    /// For updates, the names of the fields that changed.
    public var fields: [String]?
    /// For deletes, the identifier's and the `preserve_on_delete` fields' values, as a JSON object.
    public var tombstone: String?
}
