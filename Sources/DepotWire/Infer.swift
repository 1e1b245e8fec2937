/// The answer of `POST /v1/infer` (DESIGN §18): the entity a file's records
/// fit, and the evidence for each decision.
///
/// ```swift
/// let found = try await client.infer(file: "data.csv")
/// print(found.toml)   // a [[store.entity]] to paste into depot.toml
/// ```
public struct InferAnswer: Sendable, Hashable, Codable {
    /// How a delimited file is written; the members of CSV are `nil` for JSON.
    public struct Dialect: Sendable, Hashable, Codable {
        /// `,`, `;`, a tab or `|`.
        public var delimiter: String?
        /// `"` or `'`.
        public var quote: String?
        /// `\` when quotes inside quoted fields are written `\"`, else `nil`.
        public var escape: String?
        /// Whether the first record names the columns.
        public var header: Bool?
        /// `strict`, or `lenient` when a quote stands inside an unquoted field.
        public var quotes: String?
        /// `utf-8`, `utf-8-bom` or `latin-1`.
        public var encoding: String
        /// `lf`, `crlf`, `cr`, `mixed` or `none`.
        public var lineEnds: String
        /// Whether spaces follow each delimiter.
        public var skipInitialSpace: Bool

        enum CodingKeys: String, CodingKey {
            case delimiter, quote, escape, header, quotes, encoding
            case lineEnds = "line_ends", skipInitialSpace = "skip_initial_space"
        }
    }

    /// The entity, as the configuration declares it.
    public struct Entity: Sendable, Hashable, Codable {
        public var name: String
        public var identifier: [String]
        /// Field to type (`int`, `string?`…).
        public var fields: [String: String]
    }

    /// A column of the file and the field it becomes, in the file's order.
    public struct Column: Sendable, Hashable, Codable {
        /// Its name in the file (`""` without a header).
        public var column: String
        public var field: String
        /// The field's type, `?` when optional.
        public var type: String
    }

    /// The type a field had until the value at `line` widened it.
    public struct Evidence: Sendable, Hashable, Codable {
        public var type: String
        public var line: Int
        public var value: String
    }

    /// A record an import of the file would reject.
    public struct Problem: Sendable, Hashable, Codable {
        public var line: Int
        public var reason: String
    }

    /// `csv`, `tsv`, `ndjson` or `json`.
    public var format: String
    public var dialect: Dialect
    public var entity: Entity
    /// Unique, never-null fields, pairs or triples; the first is the identifier.
    public var identifierCandidates: [[String]]
    /// Column to field, for each column whose name had to change.
    public var renamed: [String: String]
    /// Field to null spelling (`""` for an empty cell) to count.
    public var nulls: [String: [String: Int]]
    /// Field to the evidence of its type.
    public var evidence: [String: Evidence]
    /// The records read.
    public var rows: Int
    /// The first records that do not fit, and how many there are.
    public var problems: [Problem]
    public var problemCount: Int
    public var columns: [Column]
    /// The `[[store.entity]]` to paste, with the evidence as comments.
    public var toml: String

    enum CodingKeys: String, CodingKey {
        case format, dialect, entity, renamed, nulls, evidence, rows, problems, columns, toml
        case identifierCandidates = "identifier_candidates", problemCount = "problem_count"
    }
}
