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
    /// For entities with `history = "values"`: the old values as a JSON
    /// object, every field for a delete, the changed fields for an update.
    public var old: String?
    /// For entities with `history = "values"`: the new values as a JSON
    /// object, every field for an insert, the changed fields for an update.
    public var new: String?

    public init(
        entity: String, identifier: String, kind: ChangeKind, fields: [String]? = nil,
        tombstone: String? = nil, old: String? = nil, new: String? = nil
    ) {
        self.entity = entity
        self.identifier = identifier
        self.kind = kind
        self.fields = fields
        self.tombstone = tombstone
        self.old = old
        self.new = new
    }
}
