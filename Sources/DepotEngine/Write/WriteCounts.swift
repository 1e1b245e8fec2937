/// What a write did, record by record, summed.
public struct WriteCounts: Sendable, Hashable {
    /// Records that were new.
    public var inserted = 0
    /// Stored records that changed.
    public var updated = 0
    /// Stored records whose values were all equal to the new ones: neither written nor logged.
    public var unchanged = 0
    /// Stored records kept under ``ConflictPolicy/skip``.
    public var skipped = 0
    /// Records deleted.
    public var deleted = 0
    /// Records whose identifier came earlier in the same input (an import's
    /// file): the later one was written in their place (`upsert`,
    /// `replace`) or dropped (`skip`).
    public var duplicates = 0
    /// Records refused, with their row in the batch and the reason.
    public var rejected: [Rejection] = []

    /// Creates zero counts.
    public init() {}

    /// Adds `other` to these counts.
    public mutating func add(_ other: WriteCounts) {
        inserted += other.inserted
        updated += other.updated
        unchanged += other.unchanged
        skipped += other.skipped
        deleted += other.deleted
        duplicates += other.duplicates
        rejected += other.rejected
    }

    /// Whether anything was written.
    public var changedAnything: Bool { inserted + updated + deleted > 0 }
}

/// A record the writer refused, and why.
public struct Rejection: Sendable, Hashable {
    /// The row's position in its batch.
    public var row: Int
    /// The field at fault, if one is.
    public var field: String?
    /// Why, in a sentence.
    public var reason: String

    package init(row: Int, field: String?, reason: String) {
        self.row = row
        self.field = field
        self.reason = reason
    }
}
