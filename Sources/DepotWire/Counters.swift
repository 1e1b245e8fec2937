/// What a job has done so far, counted: one type for an import's progress,
/// a write's counts, and the job's record as the daemon keeps and shows it
/// (its fields sit at the top of a job's JSON, beside its other fields).
///
/// ```swift
/// let job = try await client.job("j90467cda1cb6")
/// print(job.counters.inserted, job.counters.rejected)
/// ```
public struct Counters: Sendable, Hashable, Codable {
    /// Records read, good or bad (an import's header excluded); for a
    /// delete or an update, the records its selection matched.
    ///
    /// ```swift
    /// print("\(job.counters.read) records read")
    /// ```
    public var read = 0
    /// Records inserted.
    ///
    /// ```swift
    /// print("\(job.counters.inserted) new")
    /// ```
    public var inserted = 0
    /// Stored records that changed.
    ///
    /// ```swift
    /// print("\(job.counters.updated) changed")
    /// ```
    public var updated = 0
    /// Stored records whose values were all equal to the new ones: neither
    /// written nor logged.
    ///
    /// ```swift
    /// print("\(job.counters.unchanged) already so")
    /// ```
    public var unchanged = 0
    /// Stored records kept as they were under `skip`.
    ///
    /// ```swift
    /// print("\(job.counters.skipped) kept")
    /// ```
    public var skipped = 0
    /// Records superseded, in the same save, by a later record with the same
    /// identifier, so never written; a repeat in a later save counts as what
    /// it did (updated, unchanged, skipped), as its history shows.
    ///
    /// ```swift
    /// print("\(job.counters.duplicates) repeated in the file")
    /// ```
    public var duplicates = 0
    /// Records refused (the job's rejects file says why).
    ///
    /// ```swift
    /// if job.counters.rejected > 0 { print("see depotctl job \(job.id) --rejects") }
    /// ```
    public var rejected = 0
    /// Records deleted (a delete, a dedupe), or transactions (a prune).
    ///
    /// ```swift
    /// print("\(job.counters.deleted) deleted")
    /// ```
    public var deleted = 0
    /// Records an export wrote.
    ///
    /// ```swift
    /// print("\(job.counters.exported) exported")
    /// ```
    public var exported = 0
    /// Bytes of an import's input read so far.
    ///
    /// ```swift
    /// let done = Double(job.counters.bytesRead) / Double(max(job.counters.bytesTotal, 1))
    /// ```
    public var bytesRead: Int64 = 0
    /// The size of an import's input.
    ///
    /// ```swift
    /// print("\(job.counters.bytesTotal) bytes to read")
    /// ```
    public var bytesTotal: Int64 = 0
    /// Saves (transactions) committed.
    ///
    /// ```swift
    /// print("\(job.counters.saves) saves")
    /// ```
    public var saves = 0

    /// Zero counters.
    ///
    /// ```swift
    /// var counters = Counters()
    /// counters.inserted += 1
    /// ```
    public init() {}

    /// Adds `other`'s record counts and saves to these (the byte counts,
    /// which are positions, stay).
    ///
    /// ```swift
    /// var total = Counters()
    /// for job in try await client.jobs() { total.add(job.counters) }
    /// ```
    public mutating func add(_ other: Counters) {
        read += other.read
        inserted += other.inserted
        updated += other.updated
        unchanged += other.unchanged
        skipped += other.skipped
        duplicates += other.duplicates
        rejected += other.rejected
        deleted += other.deleted
        exported += other.exported
        saves += other.saves
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case read, inserted, updated, unchanged, skipped, duplicates, rejected, deleted, exported, saves
        case bytesRead = "bytes_read", bytesTotal = "bytes_total"
    }

    /// The names written before 2026-11 in an import's checkpoint.
    private enum EarlierKeys: String, CodingKey {
        case bytesRead, bytesTotal
    }

    /// Reads counters; one that is missing is 0 (an older record, or a
    /// job that never had it).
    ///
    /// ```swift
    /// let counters = try JSONDecoder().decode(Counters.self, from: Data(#"{"read": 3}"#.utf8))
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func count(_ key: CodingKeys) throws -> Int { try c.decodeIfPresent(Int.self, forKey: key) ?? 0 }
        read = try count(.read)
        inserted = try count(.inserted)
        updated = try count(.updated)
        unchanged = try count(.unchanged)
        skipped = try count(.skipped)
        duplicates = try count(.duplicates)
        rejected = try count(.rejected)
        deleted = try count(.deleted)
        exported = try count(.exported)
        saves = try count(.saves)
        let earlier = try decoder.container(keyedBy: EarlierKeys.self)
        bytesRead =
            try c.decodeIfPresent(Int64.self, forKey: .bytesRead)
            ?? earlier.decodeIfPresent(Int64.self, forKey: .bytesRead) ?? 0
        bytesTotal =
            try c.decodeIfPresent(Int64.self, forKey: .bytesTotal)
            ?? earlier.decodeIfPresent(Int64.self, forKey: .bytesTotal) ?? 0
    }

    /// Writes every counter, under its snake_case name.
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(job.counters)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(read, forKey: .read)
        try c.encode(inserted, forKey: .inserted)
        try c.encode(updated, forKey: .updated)
        try c.encode(unchanged, forKey: .unchanged)
        try c.encode(skipped, forKey: .skipped)
        try c.encode(duplicates, forKey: .duplicates)
        try c.encode(rejected, forKey: .rejected)
        try c.encode(deleted, forKey: .deleted)
        try c.encode(exported, forKey: .exported)
        try c.encode(bytesRead, forKey: .bytesRead)
        try c.encode(bytesTotal, forKey: .bytesTotal)
        try c.encode(saves, forKey: .saves)
    }
}
