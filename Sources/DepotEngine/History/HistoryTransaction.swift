/// One save that changed data, with its changes: the persistent-history
/// transaction analog.
public struct HistoryTransaction: Sendable, Hashable {
    /// The transaction's token; ask for the history after it to continue.
    public var token: HistoryToken
    /// When it was committed, as canonical UTC text (`2025-03-14T09:30:00.000Z`).
    public var timestamp: String
    /// Who made it.
    public var author: String
    /// The job it belongs to, if any.
    public var job: String?
    /// Its changes, in the order they were made.
    public var changes: [HistoryChange]
}

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
