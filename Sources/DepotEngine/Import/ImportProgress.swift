/// An import's counters, reported as it runs and when it ends.
public struct ImportProgress: Sendable, Hashable, Codable {
    /// Records read, good or bad (the header excluded).
    public var read = 0
    /// Records inserted.
    public var inserted = 0
    /// Records updated.
    public var updated = 0
    /// Records equal to the stored ones.
    public var unchanged = 0
    /// Records kept under `skip`.
    public var skipped = 0
    /// Records superseded, in the same save, by a later record with the same
    /// identifier, so never written (see ``WriteCounts/duplicates``); a
    /// repeat in a later save counts as what it did (updated, unchanged,
    /// skipped), as its history shows.
    public var duplicates = 0
    /// Records rejected.
    public var rejected = 0
    /// Bytes of the input read so far.
    public var bytesRead: Int64 = 0
    /// The input's size.
    public var bytesTotal: Int64 = 0
    /// Saves committed.
    public var saves = 0
    /// How long the last save took, from its first record to its commit,
    /// in seconds (none before the first save).
    public var lastSaveSeconds: Double?
    /// Seconds since the job (or its resumption) started.
    public var elapsed: Double = 0
    /// Whether the import has read its whole input.
    public var finished = false

    /// Creates zero counters.
    public init() {}

    /// Records read per second since the job (or its resumption) started.
    public var rate: Double { elapsed > 0 ? Double(read) / elapsed : 0 }

    /// Seconds left at the current byte rate, when it can be told.
    public var eta: Double? {
        guard elapsed > 0, bytesRead > 0, bytesTotal >= bytesRead else { return nil }
        return Double(bytesTotal - bytesRead) / (Double(bytesRead) / elapsed)
    }
}
