import DepotEngine
package import DepotWire
import Foundation

/// A job as the API shows it and the store keeps it (`depot_jobs`).
///
/// Its counters are ``Counters``, the type an import's progress, a write's
/// counts and DepotClient's `Job` hold too, read as `record.inserted`.
@dynamicMemberLookup
package struct JobRecord: Codable, Sendable, Hashable {
    package enum Kind: String, Codable, Sendable, CaseIterable {
        case `import`, delete, update, dedupe, export, prune, revert, migrate, backup

        /// The kind `text` names, or the error that lists them.
        static func read(_ text: String) throws -> Kind {
            guard let kind = Kind(rawValue: text) else {
                throw DepotError(
                    .invalidArgument,
                    "kind must be one of " + allCases.map(\.rawValue).joined(separator: ", ")
                        + ", not \(JSONText.quoted(text))")
            }
            return kind
        }
    }

    /// Where a job stands: the wire's states.
    package typealias State = Job.State
    /// The consumer that stopped a prune, and its token.
    package typealias HeldBack = Job.HeldBack

    package var id: String
    package var kind: Kind
    package var store: String
    package var entity: String?
    package var state: State
    package var author: String
    package var created: String
    package var started: String?
    package var finished: String?

    /// What the job does, every setting in its engine type; `nil` only for
    /// a record standing for one that does not decode (failed, never run).
    package var spec: JobSpec?
    /// The watched-folder file this import came from.
    package var watchFile: String?
    /// The content hash of a watched-folder file.
    package var contentHash: String?

    /// How far it got.
    package var counters = Counters()
    package var rate: Double = 0
    package var eta: Double?
    package var error: String?
    /// For a prune stopped by a consumer: which, and at what token.
    package var heldBackBy: HeldBack?
    /// For a prune: the consumers `history_max_retention` marked lost.
    package var lostConsumers: [String]?
    /// The rejects file, when the job rejected records.
    package var rejects: String?
    /// A backup's manifest, once its copy is in place.
    package var backup: BackupManifest?

    /// An import's input or an export's output.
    package var path: String? { spec?.path }

    /// A new job doing what `spec` says.
    /// A new job's id: `j` and 12 hexadecimal digits of a random UUID.
    package static func newID() -> String {
        "j" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
    }

    package init(id: String, spec: JobSpec, store: String, author: String) {
        self.init(id: id, kind: spec.kind, store: store, entity: spec.entity, author: author)
        self.spec = spec
    }

    /// A record without settings: for one that does not decode, and for tests.
    package init(id: String, kind: Kind, store: String, entity: String?, author: String) {
        self.id = id
        self.kind = kind
        self.store = store
        self.entity = entity
        self.state = .queued
        self.author = author
        self.created = Timestamp.now()
    }

    /// The record as the API shows it and the store keeps it.
    package var wire: Job {
        var job = Job(id: id, kind: kind.rawValue, store: store, state: state, author: author, created: created)
        job.started = started
        job.finished = finished
        job.entity = entity
        job.settings = spec?.settings ?? JobSettings()
        job.watchFile = watchFile
        job.contentHash = contentHash
        job.counters = counters
        job.rate = rate
        job.eta = eta
        job.error = error
        job.rejects = rejects
        job.heldBackBy = heldBackBy
        job.lostConsumers = lostConsumers
        job.backup = backup
        return job
    }

    /// A record read from the wire's form, its settings through
    /// ``JobSpec``'s readers: a setting of an unfinished job that no longer
    /// reads (a hand edit, an older release) fails with the setting named;
    /// a finished job's settings are only shown, so one that no longer
    /// reads leaves the record readable, without them.
    package init(_ job: Job) throws {
        let kind = try Kind.read(job.kind)
        self.init(id: job.id, kind: kind, store: job.store, entity: job.entity, author: job.author)
        created = job.created
        state = job.state
        started = job.started
        finished = job.finished
        spec =
            state.isFinal
            ? try? JobSpec(kind: kind, entity: job.entity, settings: job.settings)
            : try JobSpec(kind: kind, entity: job.entity, settings: job.settings)
        entity = spec?.entity ?? job.entity
        watchFile = job.watchFile
        contentHash = job.contentHash
        counters = job.counters
        rate = job.rate
        eta = job.eta
        error = job.error
        rejects = job.rejects
        heldBackBy = job.heldBackBy
        lostConsumers = job.lostConsumers
        backup = job.backup
    }

    package init(from decoder: any Decoder) throws {
        try self.init(try Job(from: decoder))
    }

    package func encode(to encoder: any Encoder) throws {
        try wire.encode(to: encoder)
    }

    /// A failed record standing for one that does not decode: what can be
    /// read of its `kind`, `entity`, `author` and `created`; `nil` when not even
    /// its kind can be.
    init?(unreadable bytes: [UInt8], id: String, store: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let kind = (object["kind"] as? String).flatMap(Kind.init(rawValue:))
        else { return nil }
        self.init(
            id: id, kind: kind, store: store, entity: object["entity"] as? String,
            author: object["author"] as? String ?? "depotd")
        created = object["created"] as? String ?? created
        state = .failed
        finished = Timestamp.now()
    }

    /// A counter, as `record.inserted`.
    package subscript<T>(dynamicMember path: WritableKeyPath<Counters, T>) -> T {
        get { counters[keyPath: path] }
        set { counters[keyPath: path] = newValue }
    }

    mutating func apply(_ p: ImportProgress) {
        counters = p.counters
        rate = p.rate
        eta = p.eta
    }

    mutating func apply(_ p: PruneOutcome) {
        counters = p.counters
        heldBackBy = p.heldBackBy.map { HeldBack(consumer: $0.consumer, token: $0.token.description) }
        lostConsumers = p.lost.isEmpty ? nil : p.lost
    }

    /// A delete's, an update's or a dedupe's counts: it read the records
    /// its selection matched.
    mutating func apply(_ c: WriteCounts) {
        counters = c.counters
        // A migration counts the records it read as it converts them.
        if kind != .migrate { counters.read = c.updated + c.deleted + c.unchanged + c.rejected }
    }

    /// A one-line summary for systemd's STATUS= and logs.
    package var summary: String {
        var s = "\(kind.rawValue) \(id) on \(store)"
        if kind == .import {
            s += ": \(counters.read) read"
            // Clamped: a record read back from disk may hold anything.
            if counters.bytesTotal > 0 {
                let done = min(max(Double(counters.bytesRead) / Double(counters.bytesTotal), 0), 1)
                s += " (\(Int(done * 100))%)"
            }
            s += ", \(rate.isFinite && rate >= 0 && rate < 1e15 ? Int(rate) : 0) rows/s"
        } else if kind == .backup, counters.bytesTotal > 0 {
            let done = min(max(Double(counters.bytesRead) / Double(counters.bytesTotal), 0), 1)
            s += ": \(Int(done * 100))% copied"
        }
        return s
    }
}
