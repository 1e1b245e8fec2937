import DepotEngine
import Foundation

/// A job as the API shows it and the store keeps it (`depot_jobs`).
public struct JobRecord: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case `import`, delete, update, dedupe, export, prune
    }

    public enum State: String, Codable, Sendable {
        case queued, running, succeeded, failed, cancelled

        public var isFinal: Bool { self == .succeeded || self == .failed || self == .cancelled }
    }

    public var id: String
    public var kind: Kind
    public var store: String
    public var entity: String?
    public var state: State
    public var author: String
    public var created: String
    public var started: String?
    public var finished: String?

    // What the job does.
    /// import: the input file; export: the output file.
    public var path: String?
    public var format: String?
    public var onConflict: String?
    /// import: when rejects fail the job: a count ("1000"), a fraction ("0.01") or a percentage ("1%").
    public var maxRejects: String?
    public var `where`: String?
    public var set: [String: JSONScalar]?
    public var by: [String]?
    public var keep: String?
    public var before: String?
    public var olderThan: String?
    /// The watched-folder file this import came from.
    public var watchFile: String?
    /// The content hash of a watched-folder file.
    public var contentHash: String?

    // How far it got.
    public var read = 0
    public var inserted = 0
    public var updated = 0
    public var unchanged = 0
    public var skipped = 0
    public var duplicates = 0
    public var rejected = 0
    public var deleted = 0
    public var exported = 0
    public var bytesRead: Int64 = 0
    public var bytesTotal: Int64 = 0
    public var saves = 0
    public var rate: Double = 0
    public var eta: Double?
    public var error: String?
    /// The rejects file, when the job rejected records.
    public var rejects: String?

    enum CodingKeys: String, CodingKey {
        case id, kind, store, entity, state, author, created, started, finished, path, format
        case onConflict = "on_conflict", maxRejects = "max_rejects", `where`, set, by, keep, before, olderThan = "older_than"
        case watchFile = "watch_file", contentHash = "content_hash"
        case read, inserted, updated, unchanged, skipped, duplicates, rejected, deleted, exported
        case bytesRead = "bytes_read", bytesTotal = "bytes_total", saves, rate, eta, error, rejects
    }

    public init(id: String, kind: Kind, store: String, entity: String?, author: String) {
        self.id = id
        self.kind = kind
        self.store = store
        self.entity = entity
        self.state = .queued
        self.author = author
        self.created = Timestamp.now()
    }

    /// A failed record standing for one that does not decode: what can be
    /// read of its `kind`, `entity`, `author` and `created`; `nil` when not even
    /// its kind can be.
    init?(unreadable bytes: [UInt8], id: String, store: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let kind = (object["kind"] as? String).flatMap(Kind.init(rawValue:)) else { return nil }
        self.init(id: id, kind: kind, store: store, entity: object["entity"] as? String,
                  author: object["author"] as? String ?? "depotd")
        created = object["created"] as? String ?? created
        path = object["path"] as? String
        state = .failed
        finished = Timestamp.now()
    }

    mutating func apply(_ p: ImportProgress) {
        read = p.read
        inserted = p.inserted
        updated = p.updated
        unchanged = p.unchanged
        skipped = p.skipped
        duplicates = p.duplicates
        rejected = p.rejected
        bytesRead = p.bytesRead
        bytesTotal = p.bytesTotal
        saves = p.saves
        rate = p.rate
        eta = p.eta
    }

    mutating func apply(_ c: WriteCounts) {
        updated = c.updated
        deleted = c.deleted
        read = c.updated + c.deleted + c.unchanged
        unchanged = c.unchanged
    }

    /// A one-line summary for systemd's STATUS= and logs.
    public var summary: String {
        var s = "\(kind.rawValue) \(id) on \(store)"
        if kind == .import {
            s += ": \(read) read"
            // Clamped: a record read back from disk may hold anything.
            if bytesTotal > 0 { s += " (\(Int(min(max(Double(bytesRead) / Double(bytesTotal), 0), 1) * 100))%)" }
            s += ", \(rate.isFinite && rate >= 0 && rate < 1e15 ? Int(rate) : 0) rows/s"
        }
        return s
    }
}

/// A JSON scalar, for `set` values.
public enum JSONScalar: Codable, Sendable, Hashable {
    case null, bool(Bool), int(Int64), double(Double), string(String)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self), d.isFinite { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else {
            throw DecodingError.typeMismatch(JSONScalar.self, .init(codingPath: decoder.codingPath,
                debugDescription: "a value must be a string, number, boolean or null"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        }
    }

    public var value: Value {
        switch self {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        }
    }
}

extension ImportOptions.RejectLimit {
    /// What a reject limit looks like, for error messages.
    static let expectation = "must be a count (1000), a fraction below 1 (0.01) or a percentage (\"1%\")"

    /// Reads "1000", "0.01" or "1%": the one reading of `max_rejects`, from
    /// the configuration, a job body or an upload's query.
    init?(text: String) {
        if let n = Int(text), n >= 0 { self = .count(n); return }
        if text.hasSuffix("%"), let p = Double(text.dropLast()), p >= 0, p <= 100 { self = .fraction(p / 100); return }
        if let f = Double(text), f >= 0, f < 1 { self = .fraction(f); return }
        return nil
    }

    var text: String {
        switch self {
        case .count(let n): String(n)
        case .fraction(let f): String(f)
        }
    }
}
