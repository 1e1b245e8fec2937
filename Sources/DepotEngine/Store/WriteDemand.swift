import Synchronization

/// The saves waiting for a store's writer (DESIGN §16: a save waits at
/// most for the running job's current save): a long import's save ends
/// early, at the next place between runs of records, when one waits, so
/// that the save is served within a fraction of a second instead of after
/// the whole of a save that grows to many seconds.
public final class WriteDemand: Sendable {
    private let waiting = Atomic<Int>(0)

    public init() {}

    /// A save begins to wait for the writer.
    package func begin() { waiting.add(1, ordering: .relaxed) }
    /// A save that waited holds the writer (or gave up).
    package func end() { waiting.subtract(1, ordering: .relaxed) }
    /// Whether a save waits for the writer.
    package var isWaiting: Bool { waiting.load(ordering: .relaxed) > 0 }
}
