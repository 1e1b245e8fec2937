/// A batch of records of one entity to write in one save, row by row.
///
/// The batch names the fields it provides (`columns`); rows hold their values
/// in that order. Under ``ConflictPolicy/upsert`` a field the batch does not
/// provide keeps its stored value. Values are stored flat, so appending a row
/// allocates nothing once the batch has reserved its capacity.
///
/// For example:
///
/// ```swift
/// var batch = RecordBatch(entity: "Trip", columns: ["id", "name", "budget"])
/// batch.append(["t1", "Paris in spring", 1200.0])
/// let counts = try await store.save(author: "me") { try $0.write(batch, policy: .upsert) }
/// ```
public struct RecordBatch: Sendable {
    /// The entity the records belong to.
    public let entity: String
    /// The fields each row provides, in order.
    public let columns: [String]
    /// All values, row after row.
    public private(set) var values: [Value] = []

    /// Creates an empty batch.
    public init(entity: String, columns: [String], reservingCapacity rows: Int = 0) {
        self.entity = entity
        self.columns = columns
        values.reserveCapacity(rows * columns.count)
    }

    /// The number of rows.
    public var count: Int { columns.isEmpty ? 0 : values.count / columns.count }

    /// Whether the batch has no rows.
    public var isEmpty: Bool { values.isEmpty }

    /// Appends one row; it must hold one value per column.
    public mutating func append(_ row: some Collection<Value>) {
        precondition(row.count == columns.count, "a row must hold one value per column")
        values.append(contentsOf: row)
    }

    /// Removes every row, keeping the capacity.
    public mutating func removeAll() {
        values.removeAll(keepingCapacity: true)
    }

    /// The values of row `index`.
    public func row(_ index: Int) -> ArraySlice<Value> {
        values[index * columns.count ..< (index + 1) * columns.count]
    }
}

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
}
