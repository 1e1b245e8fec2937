/// The answer of `POST /v1/stores/{store}/migrate` (DESIGN §18): with
/// `dry_run`, what the configuration on disk would migrate and every record
/// the conversion would reject; without, the `migrate` jobs running.
///
/// ```swift
/// let plan = try await client.migrate(store: "travel", dryRun: true)
/// for e in plan.entities { print(e.entity, e.rejected, "of", e.records, "rejected") }
/// ```
public struct MigrationAnswer: Sendable, Hashable, Codable {
    /// One field converted.
    public struct Change: Sendable, Hashable, Codable {
        public var field: String
        /// The type the store holds (`double`, `string?`); nil for a new field.
        public var from: String?
        public var to: String
        /// The expression that computes the new value from a stored record.
        public var convert: String

        public init(field: String, from: String?, to: String, convert: String) {
            self.field = field
            self.from = from
            self.to = to
            self.convert = convert
        }
    }

    /// A record whose conversion fails: the migration deletes it and
    /// writes it, whole, to the job's rejects file.
    public struct Reject: Sendable, Hashable, Codable {
        /// The record's identifier: a value, or an array for a compound one.
        public var identifier: JSONValue
        public var field: String
        public var reason: String
        /// The value the conversion gave.
        public var value: JSONValue

        public init(identifier: JSONValue, field: String, reason: String, value: JSONValue) {
            self.identifier = identifier
            self.field = field
            self.reason = reason
            self.value = value
        }
    }

    /// One entity's migration.
    public struct Entity: Sendable, Hashable, Codable {
        public var entity: String
        public var changes: [Change]
        /// The records read (a dry run's).
        public var records: Int
        /// How many would be rejected (every one is in ``rejects``).
        public var rejected: Int
        /// Whether the migration would fail, every record rejected.
        public var fails: Bool
        public var rejects: [Reject]

        public init(entity: String, changes: [Change], records: Int, rejected: Int, fails: Bool, rejects: [Reject]) {
            self.entity = entity
            self.changes = changes
            self.records = records
            self.rejected = rejected
            self.fails = fails
            self.rejects = rejects
        }
    }

    public var store: String
    /// Whether nothing was changed.
    public var dryRun: Bool
    /// The entities with changes to migrate (a dry run's).
    public var entities: [Entity]
    /// The `migrate` jobs queued or running in the store (without `dry_run`).
    public var jobs: [Job]

    public init(store: String, dryRun: Bool, entities: [Entity], jobs: [Job]) {
        self.store = store
        self.dryRun = dryRun
        self.entities = entities
        self.jobs = jobs
    }

    enum CodingKeys: String, CodingKey {
        case store, entities, jobs
        case dryRun = "dry_run"
    }
}
