import Foundation

/// A job's record (`GET /v1/jobs/ID`): what it is, where it stands, and
/// its counters, which add up to `read` and agree with its history.
///
/// ```swift
/// let job = try await client.job("j90467cda1cb6")
/// if job.state == .succeeded { print(job.inserted, job.updated, job.rejected) }
/// ```
@dynamicMemberLookup
public struct Job: Sendable, Hashable, Codable {
    /// Where a job stands.
    ///
    /// ```swift
    /// if job.state == .failed { print(job.error ?? "") }
    /// ```
    public enum State: String, Sendable, Hashable, Codable {
        /// Waiting for the jobs of its store before it.
        ///
        /// ```swift
        /// let waiting = try await client.jobs().filter { $0.state == .queued }.count
        /// ```
        case queued
        /// Running now.
        ///
        /// ```swift
        /// let busy = try await client.jobs().contains { $0.state == .running }
        /// ```
        case running
        /// Done.
        ///
        /// ```swift
        /// if job.state == .succeeded { print(job.inserted, "inserted") }
        /// ```
        case succeeded
        /// Stopped by an error; ``Job/error`` says which. What it saved stays saved.
        ///
        /// ```swift
        /// if job.state == .failed { print(job.error ?? "") }
        /// ```
        case failed
        /// Stopped on request, at a save boundary.
        ///
        /// ```swift
        /// if job.state == .cancelled { print("stopped after \(job.saves) saves") }
        /// ```
        case cancelled

        /// Whether the job has ended (succeeded, failed or cancelled).
        ///
        /// ```swift
        /// while !(try await client.job(id).state.isFinal) { try await Task.sleep(for: .seconds(1)) }
        /// ```
        public var isFinal: Bool { self == .succeeded || self == .failed || self == .cancelled }
    }

    /// The job's id: `j90467cda1cb6`.
    ///
    /// ```swift
    /// for try await state in client.progress(of: job.id) { print(state.read) }
    /// ```
    public var id: String
    /// `import`, `delete`, `update`, `dedupe`, `export` or `prune`.
    ///
    /// ```swift
    /// let imports = try await client.jobs().filter { $0.kind == "import" }
    /// ```
    public var kind: String
    /// The store it works on.
    ///
    /// ```swift
    /// let travelJobs = try await client.jobs().filter { $0.store == "travel" }
    /// ```
    public var store: String
    /// The entity, for all kinds but `prune`.
    ///
    /// ```swift
    /// print(job.entity ?? "(the whole store)")
    /// ```
    public var entity: String?
    /// Where it stands.
    ///
    /// ```swift
    /// if job.state == .running { try await client.cancel(job.id) }
    /// ```
    public var state: State
    /// Who submitted it.
    ///
    /// ```swift
    /// print("submitted by", job.author)
    /// ```
    public var author: String
    /// When it was submitted, started, finished (ISO 8601).
    ///
    /// ```swift
    /// print(job.created)     // "2026-11-24T18:52:48.162Z"
    /// ```
    public var created: String
    /// When it started running.
    ///
    /// ```swift
    /// print(job.started ?? "not yet")
    /// ```
    public var started: String?
    /// When it ended.
    ///
    /// ```swift
    /// print(job.finished ?? "still going")
    /// ```
    public var finished: String?
    /// What it has done so far: records read, inserted, updated, unchanged,
    /// skipped, duplicated, rejected, deleted, exported, bytes read of the
    /// input, saves; the same type the daemon counts in. Each reads as a
    /// property of the job too: `job.inserted`.
    ///
    /// ```swift
    /// print("\(job.counters.read) rows read, \(job.inserted) new")
    /// ```
    public var counters: Counters
    /// A counter, as `job.inserted`, `job.rejected` or `job.bytesRead`.
    ///
    /// ```swift
    /// if job.rejected > 0 { print("\(job.rejected) rejected of \(job.read)") }
    /// ```
    public subscript<T>(dynamicMember path: WritableKeyPath<Counters, T>) -> T {
        get { counters[keyPath: path] }
        set { counters[keyPath: path] = newValue }
    }
    /// Records per second.
    ///
    /// ```swift
    /// print("\(Int(job.rate)) records/s")
    /// ```
    public var rate: Double
    /// Seconds left, when the daemon can tell.
    ///
    /// ```swift
    /// if let eta = job.eta { print("about \(Int(eta)) s left") }
    /// ```
    public var eta: Double?
    /// Why it failed.
    ///
    /// ```swift
    /// if let reason = job.error { print("failed:", reason) }
    /// ```
    public var error: String?
    /// What the job does: its entity, and the settings of its kind (an
    /// import's file, format and policies; a delete's predicate; ...), as
    /// it was submitted with them and the daemon completed them.
    ///
    /// ```swift
    /// print(job.settings.where ?? "every record")
    /// ```
    public var settings: JobSettings
    /// An import's or an export's file on the daemon's machine.
    ///
    /// ```swift
    /// print(job.path ?? "")     // the spooled upload or the file imported
    /// ```
    public var path: String? {
        get { settings.path }
        set { settings.path = newValue }
    }
    /// The watched-folder file an import came from.
    ///
    /// ```swift
    /// if let file = job.watchFile { print("from the folder:", file) }
    /// ```
    public var watchFile: String?
    /// The content hash of a watched-folder file.
    ///
    /// ```swift
    /// print(job.contentHash ?? "")
    /// ```
    public var contentHash: String?
    /// The rejects file on the daemon's machine, when the job rejected records.
    ///
    /// ```swift
    /// if job.rejects != nil { print("depotctl job \(job.id) --rejects") }
    /// ```
    public var rejects: String?
    /// For a prune stopped by a consumer: which, and at what token.
    ///
    /// ```swift
    /// if let held = job.heldBackBy { print("held back by", held.consumer) }
    /// ```
    public var heldBackBy: HeldBack?
    /// For a prune: the consumers `history_max_retention` marked lost.
    ///
    /// ```swift
    /// for name in job.lostConsumers ?? [] { print(name, "is lost") }
    /// ```
    public var lostConsumers: [String]?
    /// A backup's manifest, once its copy is in place (DESIGN §20).
    ///
    /// ```swift
    /// if let manifest = job.backup { print(manifest.file, manifest.token ?? "-", manifest.sha256) }
    /// ```
    public var backup: BackupManifest?

    /// The consumer that stopped a prune, and its token.
    ///
    /// ```swift
    /// if let held = job.heldBackBy { print(held.consumer, held.token) }
    /// ```
    public struct HeldBack: Sendable, Hashable, Codable {
        /// The consumer's name.
        ///
        /// ```swift
        /// print(held.consumer)
        /// ```
        public var consumer: String
        /// The last token it acknowledged.
        ///
        /// ```swift
        /// print(held.token)
        /// ```
        public var token: String

        package init(consumer: String, token: String) {
            self.consumer = consumer
            self.token = token
        }
    }

    /// A job record, as the daemon makes one.
    package init(id: String, kind: String, store: String, state: State, author: String, created: String) {
        self.id = id
        self.kind = kind
        self.store = store
        self.state = state
        self.author = author
        self.created = created
        self.counters = Counters()
        self.rate = 0
        self.settings = JobSettings()
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, store, state, author, created, started, finished, entity
        case watchFile = "watch_file", contentHash = "content_hash"
        case rate, eta, error, rejects
        case heldBackBy = "held_back_by", lostConsumers = "lost_consumers", backup
    }

    /// Decodes a job record; counters the daemon leaves out are 0. Its
    /// settings and counters sit beside its other fields.
    ///
    /// ```swift
    /// let job = try JSONDecoder().decode(Job.self, from: Data(line.utf8))
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        kind = try c.decode(String.self, forKey: .kind)
        store = try c.decode(String.self, forKey: .store)
        state = try c.decode(State.self, forKey: .state)
        author = try c.decodeIfPresent(String.self, forKey: .author) ?? ""
        created = try c.decodeIfPresent(String.self, forKey: .created) ?? ""
        started = try c.decodeIfPresent(String.self, forKey: .started)
        finished = try c.decodeIfPresent(String.self, forKey: .finished)
        entity = try c.decodeIfPresent(String.self, forKey: .entity)
        settings = try JobSettings(from: decoder)
        watchFile = try c.decodeIfPresent(String.self, forKey: .watchFile)
        contentHash = try c.decodeIfPresent(String.self, forKey: .contentHash)
        counters = try Counters(from: decoder)
        rate = try c.decodeIfPresent(Double.self, forKey: .rate) ?? 0
        eta = try c.decodeIfPresent(Double.self, forKey: .eta)
        error = try c.decodeIfPresent(String.self, forKey: .error)
        rejects = try c.decodeIfPresent(String.self, forKey: .rejects)
        heldBackBy = try c.decodeIfPresent(HeldBack.self, forKey: .heldBackBy)
        lostConsumers = try c.decodeIfPresent([String].self, forKey: .lostConsumers)
        backup = try c.decodeIfPresent(BackupManifest.self, forKey: .backup)
    }

    /// Writes the record as the daemon sends it: its fields, its settings
    /// and its counters in one object.
    ///
    /// ```swift
    /// let line = try JSONEncoder().encode(job)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encode(store, forKey: .store)
        try c.encode(state, forKey: .state)
        try c.encode(author, forKey: .author)
        try c.encode(created, forKey: .created)
        try c.encodeIfPresent(started, forKey: .started)
        try c.encodeIfPresent(finished, forKey: .finished)
        try c.encodeIfPresent(entity, forKey: .entity)
        try settings.encode(to: encoder)
        try c.encodeIfPresent(watchFile, forKey: .watchFile)
        try c.encodeIfPresent(contentHash, forKey: .contentHash)
        try counters.encode(to: encoder)
        try c.encode(rate, forKey: .rate)
        try c.encodeIfPresent(eta, forKey: .eta)
        try c.encodeIfPresent(error, forKey: .error)
        try c.encodeIfPresent(rejects, forKey: .rejects)
        try c.encodeIfPresent(heldBackBy, forKey: .heldBackBy)
        try c.encodeIfPresent(lostConsumers, forKey: .lostConsumers)
        try c.encodeIfPresent(backup, forKey: .backup)
    }
}
