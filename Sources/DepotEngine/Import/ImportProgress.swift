public import DepotWire

/// An import's counters, reported as it runs and when it ends.
///
/// The counts are ``Counters`` (the job record's type), read through this
/// value as if they were its own: `progress.read`.
@dynamicMemberLookup
public struct ImportProgress: Sendable, Hashable, Codable {
    /// Records read, inserted, updated and the rest; bytes read of the input.
    public var counters = Counters()
    /// How long the last save took, from its first record to its commit,
    /// in seconds (none before the first save).
    public var lastSaveSeconds: Double?
    /// Seconds since the job (or its resumption) started.
    public var elapsed: Double = 0
    /// Whether the import has read its whole input.
    public var finished = false

    /// Creates zero counters.
    public init() {}

    /// A counter, as `progress.inserted`.
    public subscript<T>(dynamicMember path: WritableKeyPath<Counters, T>) -> T {
        get { counters[keyPath: path] }
        set { counters[keyPath: path] = newValue }
    }

    /// Records read per second since the job (or its resumption) started.
    public var rate: Double { elapsed > 0 ? Double(counters.read) / elapsed : 0 }

    /// Seconds left at the current byte rate, when it can be told.
    public var eta: Double? {
        guard elapsed > 0, counters.bytesRead > 0, counters.bytesTotal >= counters.bytesRead else { return nil }
        return Double(counters.bytesTotal - counters.bytesRead) / (Double(counters.bytesRead) / elapsed)
    }

    private enum CodingKeys: String, CodingKey {
        case lastSaveSeconds, elapsed, finished
    }

    // In an import's checkpoint: the counters beside the rest, as they were
    // before they were a type of their own, so that an earlier checkpoint
    // reads (and resumes) as it was written.
    public init(from decoder: any Decoder) throws {
        counters = try Counters(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        lastSaveSeconds = try c.decodeIfPresent(Double.self, forKey: .lastSaveSeconds)
        elapsed = try c.decodeIfPresent(Double.self, forKey: .elapsed) ?? 0
        finished = try c.decodeIfPresent(Bool.self, forKey: .finished) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        try counters.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(lastSaveSeconds, forKey: .lastSaveSeconds)
        try c.encode(elapsed, forKey: .elapsed)
        try c.encode(finished, forKey: .finished)
    }
}
