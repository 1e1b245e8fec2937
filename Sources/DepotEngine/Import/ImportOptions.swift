import Foundation

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
    /// The quoting byte of a CSV or TSV file; `nil` for `"`.
    public var quote: UInt8?
    /// The byte that makes the next one text inside a quoted field (`\`:
    /// `"a \"b\""` reads `a "b"`); `nil`: only `""` does.
    public var escape: UInt8?
    /// Drop the spaces after each delimiter (`a, "b, c"`).
    public var skipInitialSpace = false
    /// Whether a CSV's first record names its columns. Without, the columns
    /// are named `field_1`, `field_2`… (as `depotctl infer` names them).
    public var header = true
    /// The field of each column whose name is not its field's (a name made
    /// valid by `depotctl infer`: `"Trip ID": "Trip_ID"`).
    public var columnFields: [String: String] = [:]
    /// Spellings read as null in a field that is not a string (`NA`, `-`;
    /// `""` for a quoted empty string), as `depotctl infer` reports them.
    public var nulls: [String] = []
    /// The file's text is Latin-1 (ISO 8859-1): it is stored as UTF-8.
    public var latin1 = false
    /// Keep a reference to a record that does not exist (yet) instead of
    /// rejecting the row (`references = "defer"`, DESIGN §12): it resolves
    /// when the target arrives; `depotctl check` lists those that do not.
    public var deferReferences = false
    /// Records sorted by identifier at a time before they are written
    /// (``SortedRun``); 0 writes them in the input's order. For benchmarks
    /// and tests: the default is the measured best under the memory cap.
    package var sortRun = 65_536
    /// Records of a merged run (``MergedRun``): sorted `sortRun` at a time
    /// in memory, spilled to a temporary file and merged, so that the run
    /// visits the identifier index once for many more records than memory
    /// holds; 0 (or not more than `sortRun`) keeps runs of `sortRun` in
    /// memory (tests, and PostgreSQL's import, which sorts each save whole
    /// in memory, set it so). The default is measured (BENCHMARKS.md,
    /// "Merged runs"), against no merged runs in the same run of a
    /// benchmark with `DEPOT_IMPORT_MERGE_RUN=0` in depotd's environment.
    package var mergeRun = ImportOptions.defaultMergeRun

    static let defaultMergeRun =
        ProcessInfo.processInfo.environment["DEPOT_IMPORT_MERGE_RUN"].flatMap { Int($0) } ?? 1_048_576
    /// How long a save of the import runs before it ends for a save that
    /// waits; `nil`: as long as the save interval allows (``ImportFeed``).
    /// For tests.
    package var yieldAfter: Duration?
    /// Records to a chunk, instead of the backend's own size. For tests.
    package var chunkRows: Int?

    /// Creates options with the defaults of the design.
    public init(
        format: Format = .csv, delimiter: UInt8? = nil, lenientQuotes: Bool = false,
        onConflict: ConflictPolicy = .upsert, refuseUnknownColumns: Bool = false,
        maxRejects: RejectLimit = .count(1_000), saveEvery: Int? = nil, saveInterval: Duration? = nil
    ) {
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
