public import DepotWire

/// What a write did, record by record, summed.
///
/// The counts are ``Counters`` (the job record's type), read through this
/// value as if they were its own: `counts.updated`. `inserted`, `updated`,
/// `unchanged`, `skipped`, `deleted`, `duplicates` and `rejected` are the
/// ones a write sets; a record's `duplicates` counts records whose
/// identifier came earlier in the same input (an import's file): the later
/// one was written in their place (`upsert`, `replace`) or dropped (`skip`).
@dynamicMemberLookup
public struct WriteCounts: Sendable, Hashable {
    /// The counts.
    public var counters = Counters()
    /// Records refused, with their row in the batch and the reason
    /// (``reject(_:)`` adds one and counts it).
    public package(set) var rejections: [Rejection] = []

    /// Creates zero counts.
    public init() {}

    /// A count, as `counts.inserted`.
    public subscript<T>(dynamicMember path: WritableKeyPath<Counters, T>) -> T {
        get { counters[keyPath: path] }
        set { counters[keyPath: path] = newValue }
    }

    /// Counts a refused record.
    package mutating func reject(_ rejection: Rejection) {
        rejections.append(rejection)
        counters.rejected += 1
    }

    /// Puts the rejections in the order of their rows.
    package mutating func sortRejections() {
        rejections.sort { $0.row < $1.row }
    }

    /// Adds `other` to these counts.
    public mutating func add(_ other: WriteCounts) {
        counters.add(other.counters)
        rejections += other.rejections
    }

    /// Whether anything was written.
    public var changedAnything: Bool { counters.inserted + counters.updated + counters.deleted > 0 }
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
