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
        case `import`, delete, update, dedupe, export, prune
    }

    package enum State: String, Codable, Sendable {
        case queued, running, succeeded, failed, cancelled

        package var isFinal: Bool { self == .succeeded || self == .failed || self == .cancelled }
    }

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

    /// An import's input or an export's output.
    package var path: String? { spec?.path }

    enum CodingKeys: String, CodingKey {
        case id, kind, store, state, author, created, started, finished
        case watchFile = "watch_file", contentHash = "content_hash"
        case rate, eta, error, rejects
        case heldBackBy = "held_back_by", lostConsumers = "lost_consumers"
    }

    /// The consumer that stopped a prune, and its token.
    package struct HeldBack: Codable, Sendable, Hashable {
        package var consumer: String
        package var token: String
    }

    /// A new job doing what `spec` says.
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

    /// Reads a record, its settings through ``JobSpec``'s readers: a
    /// setting of an unfinished job that no longer reads (a hand edit, an
    /// older release) fails the decoding with the setting named.
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        kind = try c.decode(Kind.self, forKey: .kind)
        store = try c.decode(String.self, forKey: .store)
        state = try c.decode(State.self, forKey: .state)
        author = try c.decode(String.self, forKey: .author)
        created = try c.decode(String.self, forKey: .created)
        started = try c.decodeIfPresent(String.self, forKey: .started)
        finished = try c.decodeIfPresent(String.self, forKey: .finished)
        // A finished job's settings are only shown: one that no longer
        // reads leaves the record readable, without them.
        spec = state.isFinal ? try? JobSpec(kind: kind, from: decoder) : try JobSpec(kind: kind, from: decoder)
        entity =
            try spec?.entity
            ?? decoder.container(keyedBy: JobSpec.Key.self).decodeIfPresent(String.self, forKey: .entity)
        watchFile = try c.decodeIfPresent(String.self, forKey: .watchFile)
        contentHash = try c.decodeIfPresent(String.self, forKey: .contentHash)
        counters = try Counters(from: decoder)
        rate = try c.decodeIfPresent(Double.self, forKey: .rate) ?? 0
        eta = try c.decodeIfPresent(Double.self, forKey: .eta)
        error = try c.decodeIfPresent(String.self, forKey: .error)
        rejects = try c.decodeIfPresent(String.self, forKey: .rejects)
        heldBackBy = try c.decodeIfPresent(HeldBack.self, forKey: .heldBackBy)
        lostConsumers = try c.decodeIfPresent([String].self, forKey: .lostConsumers)
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encode(store, forKey: .store)
        try c.encode(state, forKey: .state)
        try c.encode(author, forKey: .author)
        try c.encode(created, forKey: .created)
        try c.encodeIfPresent(started, forKey: .started)
        try c.encodeIfPresent(finished, forKey: .finished)
        if let spec {
            try spec.encode(to: encoder)
        } else if let entity {
            var settings = encoder.container(keyedBy: JobSpec.Key.self)
            try settings.encode(entity, forKey: .entity)
        }
        try c.encodeIfPresent(watchFile, forKey: .watchFile)
        try c.encodeIfPresent(contentHash, forKey: .contentHash)
        try counters.encode(to: encoder)
        try c.encode(rate, forKey: .rate)
        try c.encodeIfPresent(eta, forKey: .eta)
        try c.encodeIfPresent(error, forKey: .error)
        try c.encodeIfPresent(rejects, forKey: .rejects)
        try c.encodeIfPresent(heldBackBy, forKey: .heldBackBy)
        try c.encodeIfPresent(lostConsumers, forKey: .lostConsumers)
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
        counters.read = c.updated + c.deleted + c.unchanged
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
        }
        return s
    }
}
