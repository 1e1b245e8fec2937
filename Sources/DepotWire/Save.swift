/// One change of a save (DESIGN §16): `{"insert": "Customer", "record": {...}}`,
/// `{"update": "Trip", "identifier": "T1", "set": {...}}`, `{"upsert": …}`,
/// `{"replace": …}`, `{"delete": "Trip", "identifier": "T2"}`. The key that
/// names the kind holds the entity.
///
/// ```swift
/// let change = SaveChange(.update, entity: "Trip", identifier: "T1", set: ["budget": 950.0])
/// ```
public struct SaveChange: Sendable, Hashable, Codable {
    /// What a change does.
    ///
    /// ```swift
    /// let kind = SaveChange.Kind.insert
    /// ```
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// A new record.
        case insert
        /// Fields of a stored record set.
        case update
        /// The record inserted, or its given fields set on the stored one.
        case upsert
        /// The record inserted, or put whole in place of the stored one.
        case replace
        /// A stored record deleted, its delete rules applied.
        case delete
    }

    /// What it does.
    ///
    /// ```swift
    /// print(change.kind.rawValue)
    /// ```
    public var kind: Kind
    /// The entity of its record.
    ///
    /// ```swift
    /// print(change.entity)
    /// ```
    public var entity: String
    /// The record (insert, upsert, replace): its fields by name.
    ///
    /// ```swift
    /// let change = SaveChange(.insert, entity: "Customer", record: ["id": "C9", "name": "Ada"])
    /// ```
    public var record: [String: JSONValue]?
    /// The record's identifier (update, delete): its value, or the array of a compound one's.
    ///
    /// ```swift
    /// let change = SaveChange(.delete, entity: "OrderLine", identifier: ["O77", 1])
    /// ```
    public var identifier: JSONValue?
    /// The fields an update sets, and their values.
    ///
    /// ```swift
    /// let change = SaveChange(.update, entity: "Trip", identifier: "T1", set: ["isFavorite": true])
    /// ```
    public var set: [String: JSONValue]?
    /// The token the client read the record at (optimistic concurrency).
    ///
    /// ```swift
    /// var change = SaveChange(.update, entity: "Trip", identifier: "T1", set: ["budget": 900])
    /// change.ifToken = "41"
    /// ```
    public var ifToken: String?

    /// A change of `kind` to a record of `entity`.
    ///
    /// ```swift
    /// let change = SaveChange(.upsert, entity: "Trip", record: ["id": "T1", "name": "Rome"])
    /// ```
    public init(
        _ kind: Kind, entity: String, record: [String: JSONValue]? = nil, identifier: JSONValue? = nil,
        set: [String: JSONValue]? = nil, ifToken: String? = nil
    ) {
        self.kind = kind
        self.entity = entity
        self.record = record
        self.identifier = identifier
        self.set = set
        self.ifToken = ifToken
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        static let record = Key("record"), identifier = Key("identifier"), set = Key("set")
        static let ifToken = Key("if_token")
    }

    /// Reads a change: exactly one of `insert`, `update`, `upsert`,
    /// `replace`, `delete`, naming the entity.
    ///
    /// ```swift
    /// let change = try JSONDecoder().decode(SaveChange.self, from: Data(#"{"delete": "Trip", "identifier": "T2"}"#.utf8))
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let kinds = Kind.allCases.filter { c.contains(Key($0.rawValue)) }
        guard kinds.count == 1, let kind = kinds.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: kinds.isEmpty
                        ? "names its kind and entity: one of \"insert\", \"update\", \"upsert\", \"replace\", \"delete\""
                        : "has one kind, not " + kinds.map { "\"\($0.rawValue)\"" }.joined(separator: " and ")))
        }
        self.kind = kind
        entity = try c.decode(String.self, forKey: Key(kind.rawValue))
        record = try c.decodeIfPresent([String: JSONValue].self, forKey: .record)
        identifier = try c.decodeIfPresent(JSONValue.self, forKey: .identifier)
        set = try c.decodeIfPresent([String: JSONValue].self, forKey: .set)
        ifToken = try c.decodeIfPresent(String.self, forKey: .ifToken)
    }

    /// Writes the change as the daemon reads it.
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(change)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(entity, forKey: Key(kind.rawValue))
        try c.encodeIfPresent(record, forKey: .record)
        try c.encodeIfPresent(identifier, forKey: .identifier)
        try c.encodeIfPresent(set, forKey: .set)
        try c.encodeIfPresent(ifToken, forKey: .ifToken)
    }
}

/// The body of `POST /v1/stores/S/save`: the changes, applied all or none.
///
/// ```swift
/// let body = SaveBody(changes: [SaveChange(.delete, entity: "Trip", identifier: "T2")])
/// ```
public struct SaveBody: Sendable, Hashable, Codable {
    /// Who saves: the history's author (the peer's user name by default).
    ///
    /// ```swift
    /// body.author = "web"
    /// ```
    public var author: String?
    /// The changes, in order.
    ///
    /// ```swift
    /// print(body.changes.count)
    /// ```
    public var changes: [SaveChange]

    /// A save of `changes`.
    ///
    /// ```swift
    /// let body = SaveBody(changes: changes)
    /// ```
    public init(
        author: String? = nil, merge: String? = nil, idempotencyKey: String? = nil, changes: [SaveChange]
    ) {
        self.author = author
        self.merge = merge
        self.idempotencyKey = idempotencyKey
        self.changes = changes
    }

    /// How a change read at a token (`if_token`) merges with the saves
    /// that changed its record since: `error` (the default), `object-trump`,
    /// `store-trump` or `overwrite` (DESIGN §16).
    ///
    /// ```swift
    /// var body = SaveBody(changes: changes); body.merge = "store-trump"
    /// ```
    public var merge: String?
    /// A key that makes the save happen once: the same key again answers
    /// the first save's answer, `replayed`, and writes nothing.
    ///
    /// ```swift
    /// var body = SaveBody(changes: changes); body.idempotencyKey = "order-7781"
    /// ```
    public var idempotencyKey: String?

    enum CodingKeys: String, CodingKey {
        case author, merge, changes
        case idempotencyKey = "idempotency_key"
    }
}

/// A save's answer: the token of its history transaction (the one live
/// fetches and the history report its changes under; none when it changed
/// nothing) and each change's outcome, in order.
///
/// ```swift
/// let answer = try await client.save(body)
/// print(answer.token ?? "nothing changed", answer.changes.map(\.effect))
/// ```
public struct SaveAnswer: Sendable, Hashable, Codable {
    /// What one change did.
    ///
    /// ```swift
    /// for c in answer.changes { print(c.index, c.entity, c.identifier, c.effect) }
    /// ```
    public struct Outcome: Sendable, Hashable, Codable {
        /// The change's position in the save.
        ///
        /// ```swift
        /// print(outcome.index)
        /// ```
        public var index: Int
        /// Its entity.
        ///
        /// ```swift
        /// print(outcome.entity)
        /// ```
        public var entity: String
        /// Its record's identifier.
        ///
        /// ```swift
        /// print(outcome.identifier)
        /// ```
        public var identifier: JSONValue
        /// What it asked: `insert`, `update`, `upsert`, `replace`, `delete`.
        ///
        /// ```swift
        /// print(outcome.kind)
        /// ```
        public var kind: String
        /// What it did: `inserted`, `updated`, `unchanged` or `deleted`.
        ///
        /// ```swift
        /// if outcome.effect == "unchanged" { print("already so") }
        /// ```
        public var effect: String

        package init(index: Int, entity: String, identifier: JSONValue, kind: String, effect: String) {
            self.index = index
            self.entity = entity
            self.identifier = identifier
            self.kind = kind
            self.effect = effect
        }
    }

    /// The history transaction's token; `null` when nothing changed.
    ///
    /// ```swift
    /// print(answer.token ?? "-")
    /// ```
    public var token: String?
    /// Each change's outcome, in the save's order.
    ///
    /// ```swift
    /// print(answer.changes.count)
    /// ```
    public var changes: [Outcome]

    /// Whether this is the answer of an earlier save of the same
    /// idempotency key, given again (nothing was written this time).
    ///
    /// ```swift
    /// if answer.replayed { print("saved before") }
    /// ```
    public var replayed: Bool

    package init(token: String?, changes: [Outcome], replayed: Bool = false) {
        self.token = token
        self.changes = changes
        self.replayed = replayed
    }

    enum CodingKeys: String, CodingKey {
        case token, changes, replayed
    }

    /// Reads an answer; `replayed` is false when absent.
    ///
    /// ```swift
    /// let answer = try JSONDecoder().decode(SaveAnswer.self, from: data)
    /// ```
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        token = try c.decodeIfPresent(String.self, forKey: .token)
        changes = try c.decode([Outcome].self, forKey: .changes)
        replayed = try c.decodeIfPresent(Bool.self, forKey: .replayed) ?? false
    }

    /// Writes the answer; `token` is `null` when nothing changed.
    ///
    /// ```swift
    /// let json = try JSONEncoder().encode(answer)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(token, forKey: .token)
        try c.encode(changes, forKey: .changes)
        if replayed { try c.encode(true, forKey: .replayed) }
    }
}

/// A change that made a save fail, in the error's `changes`.
///
/// ```swift
/// for f in failure.error.changes ?? [] { print(f.index, f.code, f.message) }
/// ```
public struct ChangeFailure: Sendable, Hashable, Codable {
    /// The change's position in the save.
    ///
    /// ```swift
    /// print(f.index)
    /// ```
    public var index: Int
    /// Why: `already_exists`, `not_found`, `conflict`, `invalid_value`,
    /// `dangling_reference`, `denied_by_delete_rule`, `duplicate_change`.
    ///
    /// ```swift
    /// if f.code == "already_exists" { print("taken") }
    /// ```
    public var code: String
    /// The field at fault, if one is.
    ///
    /// ```swift
    /// print(f.field ?? "")
    /// ```
    public var field: String?
    /// What went wrong.
    ///
    /// ```swift
    /// print(f.message)
    /// ```
    public var message: String
    /// For a `conflict`: each field another save changed since the
    /// change's token and the change sets, with its three values.
    ///
    /// ```swift
    /// for c in f.conflicts ?? [] { print(c.field, c.base ?? "?", c.stored, c.yours) }
    /// ```
    public var conflicts: [FieldConflict]?

    package init(index: Int, code: String, field: String?, message: String, conflicts: [FieldConflict]? = nil) {
        self.index = index
        self.code = code
        self.field = field
        self.message = message
        self.conflicts = conflicts
    }
}

/// One field of a conflict (DESIGN §16): its value when the record was
/// read (`base`, at the change's token), as stored now, and as the change
/// sets it.
///
/// ```swift
/// if let c = failure.conflicts?.first { print("\(c.field): \(c.base ?? "?") → \(c.stored), yours \(c.yours)") }
/// ```
public struct FieldConflict: Sendable, Hashable, Codable {
    /// The field's name.
    ///
    /// ```swift
    /// print(c.field)
    /// ```
    public var field: String
    /// Its value at the change's token; absent when the history does not
    /// keep values (`history = "values"` keeps them).
    ///
    /// ```swift
    /// print(c.base ?? "unknown")
    /// ```
    public var base: JSONValue?
    /// Its value now (`null` for a record deleted since).
    ///
    /// ```swift
    /// print(c.stored)
    /// ```
    public var stored: JSONValue
    /// The change's value (`null` for a delete).
    ///
    /// ```swift
    /// print(c.yours)
    /// ```
    public var yours: JSONValue

    package init(field: String, base: JSONValue?, stored: JSONValue, yours: JSONValue) {
        self.field = field
        self.base = base
        self.stored = stored
        self.yours = yours
    }
}

/// A request body read from an already parsed JSON tree (the daemon's
/// `JSONTree`), without `JSONDecoder`: nil for anything `Decodable` would
/// not read to the same value (the daemon then decodes the body with
/// `JSONDecoder`, which words the error).
package protocol QuickJSONBody {
    init?(json: JSONValue)
}

extension JSONValue {
    /// `decodeIfPresent`'s view of an optional member: absent and `null`
    /// are nil (`.some(nil)`); a value of another type, none (`nil`).
    fileprivate func member<T>(_ key: String, _ read: (JSONValue) -> T?) -> T?? {
        guard let value = self[key], value != .null else { return .some(nil) }
        guard let read = read(value) else { return nil }
        return .some(read)
    }
}

extension SaveChange: QuickJSONBody {
    package init?(json: JSONValue) {
        guard case .object(let members) = json else { return nil }
        let kinds = Kind.allCases.filter { members[$0.rawValue] != nil }
        guard kinds.count == 1, case .string(let entity)? = members[kinds[0].rawValue],
            let record = json.member("record", \.object), let identifier = json.member("identifier", { $0 }),
            let set = json.member("set", \.object), let ifToken = json.member("if_token", \.string)
        else { return nil }
        self.init(kinds[0], entity: entity, record: record, identifier: identifier, set: set, ifToken: ifToken)
    }

    /// The changes of a body's `changes` array.
    fileprivate static func list(_ json: JSONValue) -> [SaveChange]? {
        guard case .array(let items) = json else { return nil }
        var changes: [SaveChange] = []
        changes.reserveCapacity(items.count)
        for item in items {
            guard let change = SaveChange(json: item) else { return nil }
            changes.append(change)
        }
        return changes
    }
}

extension SaveBody: QuickJSONBody {
    package init?(json: JSONValue) {
        guard case .object = json, let changes = json["changes"].flatMap(SaveChange.list),
            let author = json.member("author", \.string), let merge = json.member("merge", \.string),
            let key = json.member("idempotency_key", \.string)
        else { return nil }
        self.init(author: author, merge: merge, idempotencyKey: key, changes: changes)
    }
}

extension ProcessorCommitBody: QuickJSONBody {
    package init?(json: JSONValue) {
        guard case .string(let lease)? = json["lease"], let changes = json.member("changes", SaveChange.list),
            let author = json.member("author", \.string), let merge = json.member("merge", \.string)
        else { return nil }
        self.init(lease: lease, changes: changes, author: author, merge: merge)
    }
}
