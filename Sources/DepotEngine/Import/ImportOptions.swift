/// How an import reads its file and writes its records.
///
/// For example:
///
/// ```swift
/// var options = ImportOptions(format: .csv)
/// options.onConflict = .replace
/// options.maxRejects = .fraction(0.01)
/// ```
public struct ImportOptions: Sendable, Hashable {
    /// The input's format.
    public enum Format: String, Sendable, Hashable, Codable {
        /// RFC 4180 comma-separated values with a header row.
        case csv
        /// Tab-separated values with a header row, quoted like CSV.
        case tsv
        /// One JSON object per line.
        case ndjson
        /// A JSON array of objects, or NDJSON: told by the first byte.
        case json

        /// The format a file name's extension names, if any
        /// (`.csv`, `.tsv`/`.tab`, `.ndjson`/`.jsonl`, `.json`).
        public init?(fileName: String) {
            let ext = fileName.split(separator: ".").last.map { $0.lowercased() } ?? ""
            switch ext {
            case "csv": self = .csv
            case "tsv", "tab": self = .tsv
            case "ndjson", "jsonl": self = .ndjson
            case "json": self = .json
            default: return nil
            }
        }
    }

    /// How many rejected records fail the job.
    public enum RejectLimit: Sendable, Hashable {
        /// More than this many.
        case count(Int)
        /// More than this fraction of the records read, judged at the end.
        case fraction(Double)
    }

    /// The input's format.
    public var format: Format
    /// The delimiter byte; `nil` for the format's own (`,` or tab).
    public var delimiter: UInt8?
    /// Read a quote inside an unquoted field as text (PostgreSQL's way)
    /// instead of rejecting the record (strict RFC 4180).
    public var lenientQuotes: Bool
    /// What to do with records whose identifier is stored.
    public var onConflict: ConflictPolicy
    /// Refuse a file with columns that are not fields, instead of ignoring them.
    public var refuseUnknownColumns: Bool
    /// When the job fails for its rejects.
    public var maxRejects: RejectLimit
    /// Save after this many records; `nil` takes the store's `save_every`.
    public var saveEvery: Int?
    /// Save at least this often; `nil` takes the store's `save_interval`.
    public var saveInterval: Duration?

    /// Creates options with the defaults of the design.
    public init(format: Format = .csv, delimiter: UInt8? = nil, lenientQuotes: Bool = false,
                onConflict: ConflictPolicy = .upsert, refuseUnknownColumns: Bool = false,
                maxRejects: RejectLimit = .count(1_000), saveEvery: Int? = nil, saveInterval: Duration? = nil) {
        self.format = format
        self.delimiter = delimiter
        self.lenientQuotes = lenientQuotes
        self.onConflict = onConflict
        self.refuseUnknownColumns = refuseUnknownColumns
        self.maxRejects = maxRejects
        self.saveEvery = saveEvery
        self.saveInterval = saveInterval
    }
}

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

/// One import: which file goes into which entity of a store, as which job.
public struct ImportRequest: Sendable, Hashable {
    /// The job's id; its checkpoint is kept under it.
    public var job: String
    /// The entity the records belong to.
    public var entity: String
    /// The input file.
    public var path: String
    /// Where rejected records are written, one JSON object per line.
    public var rejectsPath: String
    /// Who the history names as the author.
    public var author: String
    /// How to read and write.
    public var options: ImportOptions

    /// Creates a request.
    public init(job: String, entity: String, path: String, rejectsPath: String, author: String = "import",
                options: ImportOptions = ImportOptions()) {
        self.job = job
        self.entity = entity
        self.path = path
        self.rejectsPath = rejectsPath
        self.author = author
        self.options = options
    }
}
