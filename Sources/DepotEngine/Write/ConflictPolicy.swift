/// What to do when a written record's identifier is already stored.
public enum ConflictPolicy: String, Sendable, CaseIterable, Codable {
    /// Insert, or update the fields the batch provides (the default).
    case upsert
    /// The new record replaces the stored one whole: fields it does not provide become null.
    case replace
    /// Keep the stored record.
    case skip
    /// Fail the save; nothing of it is committed.
    case fail
}
