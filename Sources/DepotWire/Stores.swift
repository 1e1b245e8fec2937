/// A store as the daemon describes it (`GET /v1/stores/S`).
///
/// ```swift
/// let store = try await client.store("travel")
/// print(store.entities.map { "\($0.name): \($0.count)" })
/// ```
public struct StoreInfo: Sendable, Hashable, Codable {
    /// The store's name.
    ///
    /// ```swift
    /// let names = try await client.stores().map(\.name)
    /// ```
    public var name: String
    /// Its file on the daemon's machine.
    ///
    /// ```swift
    /// print(store.path)     // "/var/lib/depot/travel.sqlite"
    /// ```
    public var path: String
    /// The latest history token, `nil` before the first change.
    ///
    /// ```swift
    /// let live = client.live(request, since: try await client.store("travel").token ?? "0")
    /// ```
    public var token: String?
    /// Its entities, in declaration order.
    ///
    /// ```swift
    /// for e in store.entities { print(e.name, e.count) }
    /// ```
    public var entities: [EntityInfo]

    /// The entity of that name, if the store has one: `store.entity("Trip")?.count`.
    ///
    /// ```swift
    /// let trips = store.entity("Trip")?.count ?? 0
    /// ```
    public func entity(_ name: String) -> EntityInfo? { entities.first { $0.name == name } }

    package init(name: String, path: String, token: String?, entities: [EntityInfo]) {
        self.name = name
        self.path = path
        self.token = token
        self.entities = entities
    }

    enum CodingKeys: String, CodingKey {
        case name, path, token, entities
    }

    /// Writes the store; a store without history yet has a `null` token.
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(store)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(path, forKey: .path)
        try c.encode(token, forKey: .token)
        try c.encode(entities, forKey: .entities)
    }
}

/// An entity as the daemon describes it.
///
/// ```swift
/// let trip = try await client.store("travel").entity("Trip")!
/// print(trip.identifier, trip.fields.map(\.name), trip.count)
/// ```
public struct EntityInfo: Sendable, Hashable, Codable {
    /// A field and its declared type (`string`, `double?`, …).
    ///
    /// ```swift
    /// let optional = entity.fields.filter { $0.type.hasSuffix("?") }.map(\.name)
    /// ```
    public struct Field: Sendable, Hashable, Codable {
        /// The field's name.
        ///
        /// ```swift
        /// let names = entity.fields.map(\.name)
        /// ```
        public var name: String
        /// Its type as declared: `string`, `int`, `double`, `bool`, `date`, `json`, with `?` when optional.
        ///
        /// ```swift
        /// let dates = entity.fields.filter { $0.type.hasPrefix("date") }
        /// ```
        public var type: String

        package init(name: String, type: String) {
            self.name = name
            self.type = type
        }
    }

    /// A relationship (DESIGN §12).
    ///
    /// ```swift
    /// for r in entity.relationships { print(r.name, r.kind, r.to) }
    /// ```
    public struct Relationship: Sendable, Hashable, Codable {
        /// The relationship's name, as `prefetch` and key paths take it.
        ///
        /// ```swift
        /// request.prefetch = entity.relationships.map(\.name)
        /// ```
        public var name: String
        /// The entity it points at.
        ///
        /// ```swift
        /// let targets = Set(entity.relationships.map(\.to))
        /// ```
        public var to: String
        /// `to-one` or `to-many`.
        ///
        /// ```swift
        /// let toOnes = entity.relationships.filter { $0.kind == "to-one" }
        /// ```
        public var kind: String
        /// A to-one: whether it may be null.
        ///
        /// ```swift
        /// let mandatory = entity.relationships.filter { $0.required == true }
        /// ```
        public var required: Bool?
        /// A to-one: the fields that hold the target's identifier.
        ///
        /// ```swift
        /// print(relationship.columns ?? [])     // ["customer"]
        /// ```
        public var columns: [String]?
        /// A to-many: the to-one of the target that points back.
        ///
        /// ```swift
        /// print(relationship.inverse ?? "")     // "customer", on Order
        /// ```
        public var inverse: String?
        /// A to-many: what deleting this record does to its targets (`cascade`, `nullify`, `deny`).
        ///
        /// ```swift
        /// if relationship.delete == "deny" { print("delete the \(relationship.to) records first") }
        /// ```
        public var delete: String?

        package init(
            name: String, to: String, kind: String, required: Bool? = nil, columns: [String]? = nil,
            inverse: String? = nil, delete: String? = nil
        ) {
            self.name = name
            self.to = to
            self.kind = kind
            self.required = required
            self.columns = columns
            self.inverse = inverse
            self.delete = delete
        }
    }

    /// The entity's name.
    ///
    /// ```swift
    /// let request = FetchRequest(store: store.name, entity: entity.name)
    /// ```
    public var name: String
    /// Its records now.
    ///
    /// ```swift
    /// let total = store.entities.map(\.count).reduce(0, +)
    /// ```
    public var count: Int
    /// The identifier's fields.
    ///
    /// ```swift
    /// let key = entity.identifier.joined(separator: "+")
    /// ```
    public var identifier: [String]
    /// Its secondary indexes, each a list of fields.
    ///
    /// ```swift
    /// let indexed = Set(entity.indexes.compactMap(\.first))
    /// ```
    public var indexes: [[String]]
    /// Its fields, in declaration order.
    ///
    /// ```swift
    /// let columns = entity.fields.map(\.name)
    /// ```
    public var fields: [Field]
    /// Its relationships.
    ///
    /// ```swift
    /// let prefetchable = entity.relationships.map(\.name)
    /// ```
    public var relationships: [Relationship]
    /// Where it is declared: `config` (depot.toml) or `api` (created with
    /// `PUT /v1/stores/{store}/entities/{entity}`, kept in the store; DESIGN §18).
    ///
    /// ```swift
    /// let created = store.entities.filter { $0.declared == "api" }.map(\.name)
    /// ```
    public var declared: String
    /// What its history keeps of each change: `fields` or `values`.
    ///
    /// ```swift
    /// if entity.history == "values" { print("changes carry old and new values") }
    /// ```
    public var history: String

    package init(
        name: String, count: Int, identifier: [String], indexes: [[String]], fields: [Field],
        relationships: [Relationship], declared: String = "config", history: String = "fields"
    ) {
        self.name = name
        self.count = count
        self.identifier = identifier
        self.indexes = indexes
        self.fields = fields
        self.relationships = relationships
        self.declared = declared
        self.history = history
    }

    enum CodingKeys: String, CodingKey {
        case name, count, identifier, indexes, fields, relationships, declared, history
    }

    /// Reads an entity; one from a daemon before DESIGN §18 (without
    /// `declared` and `history`) reads as declared in the configuration,
    /// its history of fields.
    ///
    /// ```swift
    /// let entity = try JSONDecoder().decode(EntityInfo.self, from: body)
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        count = try c.decode(Int.self, forKey: .count)
        identifier = try c.decode([String].self, forKey: .identifier)
        indexes = try c.decode([[String]].self, forKey: .indexes)
        fields = try c.decode([Field].self, forKey: .fields)
        relationships = try c.decode([Relationship].self, forKey: .relationships)
        declared = try c.decodeIfPresent(String.self, forKey: .declared) ?? "config"
        history = try c.decodeIfPresent(String.self, forKey: .history) ?? "fields"
    }
}

/// `GET /v1/stores`: every store the daemon serves.
///
/// ```swift
/// let list = try JSONDecoder().decode(StoreList.self, from: body)
/// ```
public struct StoreList: Sendable, Hashable, Codable {
    /// The stores, in the configuration's order.
    ///
    /// ```swift
    /// for store in list.stores { print(store.name) }
    /// ```
    public var stores: [StoreInfo]

    /// A list of `stores`, as the daemon answers it.
    ///
    /// ```swift
    /// let list = StoreList(stores: try await client.stores())
    /// ```
    public init(stores: [StoreInfo]) { self.stores = stores }
}

/// `GET /v1/health`: whether the daemon and each store answer, and its jobs.
///
/// ```swift
/// let health = try await client.health()
/// print(health.status, health.jobs.running)
/// ```
public struct Health: Sendable, Hashable, Codable {
    /// A store, and whether it answered.
    ///
    /// ```swift
    /// for store in health.stores where !store.ok { print(store.name, "does not answer") }
    /// ```
    public struct Store: Sendable, Hashable, Codable {
        /// The store's name.
        ///
        /// ```swift
        /// print(store.name)
        /// ```
        public var name: String
        /// Whether it answered.
        ///
        /// ```swift
        /// print(store.ok ? "ok" : "down")
        /// ```
        public var ok: Bool

        package init(name: String, ok: Bool) {
            self.name = name
            self.ok = ok
        }
    }

    /// The jobs running and queued.
    ///
    /// ```swift
    /// print(health.jobs.running, "running,", health.jobs.queued, "queued")
    /// ```
    public struct Jobs: Sendable, Hashable, Codable {
        /// Jobs running now.
        ///
        /// ```swift
        /// print(health.jobs.running)
        /// ```
        public var running: Int
        /// Jobs waiting.
        ///
        /// ```swift
        /// print(health.jobs.queued)
        /// ```
        public var queued: Int

        package init(running: Int, queued: Int) {
            self.running = running
            self.queued = queued
        }
    }

    /// `ok` while the daemon answers.
    ///
    /// ```swift
    /// print(health.status)
    /// ```
    public var status: String
    /// Each store.
    ///
    /// ```swift
    /// print(health.stores.filter(\.ok).count, "stores answer")
    /// ```
    public var stores: [Store]
    /// The jobs.
    ///
    /// ```swift
    /// print(health.jobs.running)
    /// ```
    public var jobs: Jobs

    package init(status: String, stores: [Store], jobs: Jobs) {
        self.status = status
        self.stores = stores
        self.jobs = jobs
    }
}

/// `GET /v1/stores/S/check`: the references that point at nothing
/// (DESIGN §12), counted per to-one, the first ones listed.
///
/// ```swift
/// let check = try await client.check(store: "shop")
/// if check.total > 0 { print(check.dangling.map(\.identifier)) }
/// ```
public struct ReferenceCheck: Sendable, Hashable, Codable {
    /// A to-one and how many of its references point at nothing.
    ///
    /// ```swift
    /// for r in check.relationships { print(r.entity, r.relationship, r.dangling) }
    /// ```
    public struct Relationship: Sendable, Hashable, Codable {
        /// The entity that holds the reference.
        ///
        /// ```swift
        /// print(r.entity)
        /// ```
        public var entity: String
        /// The to-one's name.
        ///
        /// ```swift
        /// print(r.relationship)
        /// ```
        public var relationship: String
        /// The entity it points at.
        ///
        /// ```swift
        /// print(r.to)
        /// ```
        public var to: String
        /// References to no record.
        ///
        /// ```swift
        /// print(r.dangling)
        /// ```
        public var dangling: Int

        package init(entity: String, relationship: String, to: String, dangling: Int) {
            self.entity = entity
            self.relationship = relationship
            self.to = to
            self.dangling = dangling
        }
    }

    /// A record whose reference points at nothing.
    ///
    /// ```swift
    /// for d in check.dangling { print(d.entity, d.identifier, "->", d.reference) }
    /// ```
    public struct Dangling: Sendable, Hashable, Codable {
        /// The record's entity.
        ///
        /// ```swift
        /// print(d.entity)
        /// ```
        public var entity: String
        /// The record's identifier.
        ///
        /// ```swift
        /// print(d.identifier)
        /// ```
        public var identifier: JSONValue
        /// The to-one.
        ///
        /// ```swift
        /// print(d.relationship)
        /// ```
        public var relationship: String
        /// The entity it points at.
        ///
        /// ```swift
        /// print(d.to)
        /// ```
        public var to: String
        /// The identifier it names, which no record has.
        ///
        /// ```swift
        /// print(d.reference)
        /// ```
        public var reference: JSONValue

        package init(entity: String, identifier: JSONValue, relationship: String, to: String, reference: JSONValue) {
            self.entity = entity
            self.identifier = identifier
            self.relationship = relationship
            self.to = to
            self.reference = reference
        }
    }

    /// References to no record, in all.
    ///
    /// ```swift
    /// print(check.total)
    /// ```
    public var total: Int
    /// Each to-one's count.
    ///
    /// ```swift
    /// print(check.relationships.count)
    /// ```
    public var relationships: [Relationship]
    /// The first of them.
    ///
    /// ```swift
    /// print(check.dangling.first?.reference ?? .null)
    /// ```
    public var dangling: [Dangling]

    package init(total: Int, relationships: [Relationship], dangling: [Dangling]) {
        self.total = total
        self.relationships = relationships
        self.dangling = dangling
    }
}

/// `GET /v1/me`: the user the daemon sees on the connection (by
/// `SO_PEERCRED`), and the role `[access]` gives them: what the console
/// shows of its controls.
///
/// ```swift
/// let me = try await client.me()
/// if me.role == "read" { print("read only") }
/// ```
public struct Identity: Sendable, Hashable, Codable {
    /// The user's uid.
    ///
    /// ```swift
    /// print(me.uid)
    /// ```
    public var uid: Int
    /// The user's name, when the system knows it.
    ///
    /// ```swift
    /// print(me.user ?? "uid \(me.uid)")
    /// ```
    public var user: String?
    /// `read` or `write`.
    ///
    /// ```swift
    /// let canWrite = me.role == "write"
    /// ```
    public var role: String

    package init(uid: Int, user: String?, role: String) {
        self.uid = uid
        self.user = user
        self.role = role
    }

    enum CodingKeys: String, CodingKey {
        case uid, user, role
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(uid, forKey: .uid)
        try c.encode(user, forKey: .user)
        try c.encode(role, forKey: .role)
    }
}

/// `GET /v1/figures`: the daemon's own figures over the last hour, a point
/// every `interval` seconds, oldest first (the console's charts). Kept in
/// the daemon's memory: a restart starts them anew.
///
/// ```swift
/// let figures = try await client.figures()
/// print(figures.samples.last?.rowsPerSecond ?? 0, "rows/s")
/// ```
public struct FigureList: Sendable, Hashable, Codable {
    /// Seconds between two points.
    ///
    /// ```swift
    /// print(figures.interval)
    /// ```
    public var interval: Int
    /// The points, oldest first, at most an hour of them.
    ///
    /// ```swift
    /// for point in figures.samples { print(point.time, point.rowsPerSecond) }
    /// ```
    public var samples: [FigureSample]

    package init(interval: Int, samples: [FigureSample]) {
        self.interval = interval
        self.samples = samples
    }
}

/// One point of ``FigureList``: what happened in the `interval` before `time`.
///
/// ```swift
/// if let ms = point.saveMilliseconds { print("saves took", ms, "ms on average") }
/// ```
public struct FigureSample: Sendable, Hashable, Codable {
    /// When the point was taken (UTC).
    ///
    /// ```swift
    /// print(point.time)
    /// ```
    public var time: String
    /// Records read by imports per second.
    ///
    /// ```swift
    /// print(point.rowsPerSecond)
    /// ```
    public var rowsPerSecond: Double
    /// The mean time of the saves answered over the API (a change set, a
    /// record's PUT, PATCH or DELETE), in milliseconds; nil without any.
    ///
    /// ```swift
    /// print(point.saveMilliseconds ?? 0)
    /// ```
    public var saveMilliseconds: Double?
    /// How many such saves were answered.
    ///
    /// ```swift
    /// print(point.saves)
    /// ```
    public var saves: Int
    /// The mean time of the jobs' saves (an import's, from its first record
    /// to its commit), in milliseconds; nil without any.
    ///
    /// ```swift
    /// print(point.importSaveMilliseconds ?? 0)
    /// ```
    public var importSaveMilliseconds: Double?
    /// The largest lag of a consumer, in transactions; nil without consumers.
    ///
    /// ```swift
    /// print(point.consumerLag ?? 0)
    /// ```
    public var consumerLag: Int?

    package init(
        time: String, rowsPerSecond: Double, saveMilliseconds: Double?, saves: Int, importSaveMilliseconds: Double?,
        consumerLag: Int?
    ) {
        self.time = time
        self.rowsPerSecond = rowsPerSecond
        self.saveMilliseconds = saveMilliseconds
        self.saves = saves
        self.importSaveMilliseconds = importSaveMilliseconds
        self.consumerLag = consumerLag
    }

    enum CodingKeys: String, CodingKey {
        case time, saves
        case rowsPerSecond = "rows_per_second", saveMilliseconds = "save_ms"
        case importSaveMilliseconds = "import_save_ms", consumerLag = "consumer_lag"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(time, forKey: .time)
        try c.encode(rowsPerSecond, forKey: .rowsPerSecond)
        try c.encode(saveMilliseconds, forKey: .saveMilliseconds)
        try c.encode(saves, forKey: .saves)
        try c.encode(importSaveMilliseconds, forKey: .importSaveMilliseconds)
        try c.encode(consumerLag, forKey: .consumerLag)
    }
}
