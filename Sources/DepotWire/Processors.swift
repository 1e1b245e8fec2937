/// The body of `POST /v1/stores/{store}/processors` (DESIGN §17): a
/// processor over the records of `entity` that match `where` now, handed
/// out `batch` at a time under leases of `lease`.
///
/// ```swift
/// let body = ProcessorBody(name: "geocode", entity: "Trip", where: "lat == nil", batch: 500, lease: "30s")
/// ```
public struct ProcessorBody: Sendable, Hashable, Codable {
    /// Its name in the store: letters, digits, `_`, `-`, `.`.
    public var name: String
    /// The entity whose records it goes through.
    public var entity: String
    /// Only the records this predicate matches when it is created.
    public var `where`: String?
    /// Records a batch (default 500, at most 10,000).
    public var batch: Int?
    /// How long a batch stays a client's (default `30s`).
    public var lease: String?

    /// A processor's body.
    ///
    /// ```swift
    /// let body = ProcessorBody(name: "mail", entity: "Order")
    /// ```
    public init(name: String, entity: String, where predicate: String? = nil, batch: Int? = nil, lease: String? = nil) {
        self.name = name
        self.entity = entity
        self.where = predicate
        self.batch = batch
        self.lease = lease
    }
}

/// A processor and its progress, as `GET /v1/stores/{store}/processors` lists it.
///
/// ```swift
/// if state.state == "finished" { print(state.done, "of", state.total) }
/// ```
public struct ProcessorState: Sendable, Hashable, Codable {
    /// Its name.
    public var name: String
    /// Its entity.
    public var entity: String
    /// Its predicate.
    public var `where`: String?
    /// Records a batch.
    public var batch: Int
    /// Its lease, as a duration (`30s`).
    public var lease: String
    /// When it was created.
    public var created: String
    /// Records it covers, and those of committed batches.
    public var total: Int
    /// Records of committed batches.
    public var done: Int
    /// Its batches.
    public var batches: Int
    /// Batches committed.
    public var batchesDone: Int
    /// Batches under a lease now.
    public var leased: Int
    /// When a batch was last committed.
    public var lastCommit: String?
    /// Records committed a second since its creation.
    public var rate: Double
    /// Seconds until the last batch, at that rate; nil before the first commit or once finished.
    public var eta: Double?
    /// `running` or `finished`.
    public var state: String

    /// A processor's state.
    ///
    /// ```swift
    /// let s = ProcessorState(name: "geocode", entity: "Trip", batch: 500, lease: "30s", created: "2026-01-01T00:00:00.000Z")
    /// ```
    public init(
        name: String, entity: String, where predicate: String? = nil, batch: Int, lease: String, created: String,
        total: Int = 0, done: Int = 0, batches: Int = 0, batchesDone: Int = 0, leased: Int = 0,
        lastCommit: String? = nil, rate: Double = 0, eta: Double? = nil, state: String = "running"
    ) {
        self.name = name
        self.entity = entity
        self.where = predicate
        self.batch = batch
        self.lease = lease
        self.created = created
        self.total = total
        self.done = done
        self.batches = batches
        self.batchesDone = batchesDone
        self.leased = leased
        self.lastCommit = lastCommit
        self.rate = rate
        self.eta = eta
        self.state = state
    }

    enum CodingKeys: String, CodingKey {
        case name, entity, `where`, batch, lease, created, total, done, batches, leased, rate, eta, state
        case batchesDone = "batches_done", lastCommit = "last_commit"
    }
}

/// `GET /v1/stores/{store}/processors`.
///
/// ```swift
/// let names = list.processors.map(\.name)
/// ```
public struct ProcessorList: Sendable, Hashable, Codable {
    /// The processors, by name.
    public var processors: [ProcessorState]

    /// A list.
    ///
    /// ```swift
    /// let none = ProcessorList(processors: [])
    /// ```
    public init(processors: [ProcessorState]) { self.processors = processors }
}

/// A batch handed out by `POST .../processors/{name}/next`: its lease and records.
///
/// ```swift
/// for record in batch.records { print(record["id"] ?? .null) }
/// ```
public struct ProcessorBatchAnswer: Sendable, Hashable, Codable {
    /// The lease to commit with.
    public var lease: String
    /// When the lease lapses: a commit after it changes nothing.
    public var expires: String
    /// The batch's records, in identifier order.
    public var records: [JSONValue]

    /// A batch.
    ///
    /// ```swift
    /// let empty = ProcessorBatchAnswer(lease: "0-ab", expires: "2026-01-01T00:00:30.000Z", records: [])
    /// ```
    public init(lease: String, expires: String, records: [JSONValue]) {
        self.lease = lease
        self.expires = expires
        self.records = records
    }
}

/// The body of `POST .../processors/{name}/commit`: the batch's lease and
/// its changes (a save's), applied with the cursor's move in one transaction.
///
/// ```swift
/// let body = ProcessorCommitBody(lease: batch.lease, changes: [SaveChange(.update, entity: "Trip", identifier: "T1", set: ["lat": 48.8])])
/// ```
public struct ProcessorCommitBody: Sendable, Hashable, Codable {
    /// The lease `next` gave.
    public var lease: String
    /// The changes; none commits the batch alone.
    public var changes: [SaveChange]?
    /// The history transaction's author; the client's user by default.
    public var author: String?
    /// How the changes merge (a save's `merge`).
    public var merge: String?

    /// A commit.
    ///
    /// ```swift
    /// let done = ProcessorCommitBody(lease: "3-9f2c")
    /// ```
    public init(lease: String, changes: [SaveChange]? = nil, author: String? = nil, merge: String? = nil) {
        self.lease = lease
        self.changes = changes
        self.author = author
        self.merge = merge
    }
}

/// What a commit did: the save's answer and the processor's progress.
///
/// ```swift
/// print(answer.token ?? "nothing changed", answer.processor.done)
/// ```
public struct ProcessorCommitAnswer: Sendable, Hashable, Codable {
    /// The save's token; nil when the changes changed nothing.
    public var token: String?
    /// Each change's outcome.
    public var changes: [SaveAnswer.Outcome]
    /// The processor after the commit.
    public var processor: ProcessorState

    /// An answer.
    ///
    /// ```swift
    /// let a = ProcessorCommitAnswer(token: nil, changes: [], processor: state)
    /// ```
    public init(token: String?, changes: [SaveAnswer.Outcome], processor: ProcessorState) {
        self.token = token
        self.changes = changes
        self.processor = processor
    }
}
