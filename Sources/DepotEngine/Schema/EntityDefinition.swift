import Foundation

/// An entity as the API creates it (`PUT /v1/stores/{s}/entities/{e}`,
/// DESIGN §18) and the store keeps it: its fields in order, identifier,
/// indexes and history detail. Relationships are declared in the
/// configuration only.
///
/// ```swift
/// let body = #"{"identifier": "id", "fields": {"id": "string", "n": "int?"}, "indexes": [["n"]]}"#
/// let definition = try EntityDefinition(json: Array(body.utf8), name: "Data")
/// let entity = try definition.schema()
/// ```
public struct EntityDefinition: Sendable, Equatable {
    public var name: String
    /// Each field's name and declaration (`int?`), in order.
    public var fields: [(name: String, type: String)]
    public var identifier: [String]
    public var indexes: [[String]]
    /// `fields` or `values` (DESIGN §11).
    public var history: HistoryDetail
    /// Each field's `convert` (DESIGN §18): a `PUT` that changes a field's
    /// type, or adds a required field, says how the stored values come.
    public var convert: [String: String] = [:]

    public static func == (a: EntityDefinition, b: EntityDefinition) -> Bool {
        a.name == b.name && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.type) == b.fields.map(\.type)
            && a.identifier == b.identifier && a.indexes == b.indexes && a.history == b.history
            && a.convert == b.convert
    }

    public init(_ entity: EntitySchema) {
        name = entity.name
        fields = entity.fields.map { ($0.name, $0.declaration) }
        identifier = entity.identifier
        indexes = entity.indexes
        history = entity.history
        convert = entity.fieldsConverted
    }

    /// The entity, checked as the configuration's are.
    ///
    /// - Throws: ``DepotError/Code/invalidSchema`` naming every problem.
    public func schema() throws -> EntitySchema {
        let declared = try fields.map { try Field(name: $0.name, declaration: $0.type) }
        var entity = try EntitySchema(
            name: name, fields: declared, identifier: identifier, indexes: indexes, history: history)
        for field in convert.keys where entity.position(of: field) == nil {
            throw DepotError(
                .invalidSchema,
                "entity \(JSONText.quoted(name)): convert names unknown field \(JSONText.quoted(field))"
                    + DepotError.suggestion(for: field, in: declared.map(\.name)))
        }
        entity.fieldsConverted = convert
        return entity
    }

    /// The definition as the store keeps it (and `GET` shows it): fields as
    /// an object in their order.
    public var json: String {
        var o = "{\"name\": \(JSONText.quoted(name)), \"identifier\": "
        o += "[" + identifier.map(JSONText.quoted).joined(separator: ", ") + "], \"fields\": {"
        o += fields.map { "\(JSONText.quoted($0.name)): \(JSONText.quoted($0.type))" }.joined(separator: ", ")
        o += "}, \"indexes\": ["
        o += indexes.map { "[" + $0.map(JSONText.quoted).joined(separator: ", ") + "]" }.joined(separator: ", ")
        o += "], \"history\": \(JSONText.quoted(history.rawValue))"
        if !convert.isEmpty {
            o += ", \"convert\": {"
            o += convert.sorted { $0.key < $1.key }.map { "\(JSONText.quoted($0.key)): \(JSONText.quoted($0.value))" }
                .joined(separator: ", ")
            o += "}"
        }
        return o + "}"
    }

    /// Reads a definition: `{"identifier": "id" or ["a", "b"], "fields":
    /// {"id": "string", …}, "indexes": [["a"], …], "history": "values"}`,
    /// fields in the order the text gives them. `name` is the entity's (a
    /// `"name"` in the body must be the same).
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` saying what is wrong.
    public init(json bytes: [UInt8], name: String) throws {
        struct Body: Decodable {
            var name: String?
            var identifier: Identifier
            var fields: [String: String]
            var indexes: [[String]]?
            var history: String?
            var convert: [String: String]?

            enum Identifier: Decodable {
                case one(String)
                case many([String])
                init(from decoder: any Decoder) throws {
                    let c = try decoder.singleValueContainer()
                    if let one = try? c.decode(String.self) {
                        self = .one(one)
                    } else {
                        self = .many(try c.decode([String].self))
                    }
                }
            }
        }
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: Data(bytes))
        } catch {
            throw DepotError(
                .invalidArgument,
                "an entity's definition is {\"identifier\": \"id\", \"fields\": {\"id\": \"string\", …}, "
                    + "\"indexes\": [[…]], \"history\": \"fields\" or \"values\"}: \(Self.describe(error))")
        }
        if let given = body.name, given != name {
            throw DepotError(
                .invalidArgument, "the body names entity \(JSONText.quoted(given)), the path \(JSONText.quoted(name))")
        }
        let order = JSONSyntax.memberKeys(bytes, of: "fields") ?? body.fields.keys.sorted()
        self.name = name
        var seen = Set<String>()
        fields = order.filter { seen.insert($0).inserted }.compactMap { key in body.fields[key].map { (key, $0) } }
        switch body.identifier {
        case .one(let one): identifier = [one]
        case .many(let many): identifier = many
        }
        indexes = body.indexes ?? []
        guard let detail = HistoryDetail(rawValue: body.history ?? "fields") else {
            throw DepotError(
                .invalidArgument, "history must be fields or values, not \(JSONText.quoted(body.history ?? ""))")
        }
        history = detail
        convert = body.convert ?? [:]
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "\(key.stringValue) is missing"
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c):
            return "\(c.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case DecodingError.dataCorrupted: return "the body is not JSON"
        default: return "\(error)"
        }
    }
}

extension JSONSyntax {
    /// The names of the members of the object that member `key` of the
    /// top-level object holds, in the text's order; nil when there is none.
    static func memberKeys(_ bytes: [UInt8], of key: String) -> [String]? {
        bytes.withUnsafeBufferPointer { b -> [String]? in
            guard let p = b.baseAddress else { return nil }
            let n = b.count
            /// The members of the object at `i`: each key and where its value starts and ends.
            func members(_ start: Int) -> [(String, Int, Int)]? {
                var i = skipSpace(p, start, n)
                guard i < n, p[i] == 0x7B else { return nil }
                i = skipSpace(p, i + 1, n)
                var out: [(String, Int, Int)] = []
                if i < n, p[i] == 0x7D { return out }
                while i < n {
                    guard p[i] == 0x22 else { return nil }
                    var escapes = false
                    guard case .end(let e) = scanString(p, i, n, complete: true, escapes: &escapes) else { return nil }
                    var name: [UInt8] = []
                    if escapes { unescape(p, i + 1, e - 1, into: &name) } else { name = Array(b[(i + 1)..<(e - 1)]) }
                    i = skipSpace(p, e, n)
                    guard i < n, p[i] == 0x3A else { return nil }
                    i = skipSpace(p, i + 1, n)
                    guard case .end(let v) = scanValue(p, i, n, complete: true) else { return nil }
                    out.append((String(decoding: name, as: UTF8.self), i, v))
                    i = skipSpace(p, v, n)
                    guard i < n else { return nil }
                    if p[i] == 0x7D { return out }
                    guard p[i] == 0x2C else { return nil }
                    i = skipSpace(p, i + 1, n)
                }
                return nil
            }
            guard let top = members(0), let member = top.last(where: { $0.0 == key }) else { return nil }
            return members(member.1)?.map(\.0)
        }
    }
}

extension EntityDefinition {
    /// An entity the store keeps, read back.
    package static func stored(_ text: String, store: String) throws -> EntitySchema {
        struct Named: Decodable { var name: String }
        let bytes = Array(text.utf8)
        guard let name = try? JSONDecoder().decode(Named.self, from: Data(bytes)).name else {
            throw DepotError(.migrationRefused, "store \(JSONText.quoted(store)) keeps an unreadable entity definition")
        }
        do {
            return try EntityDefinition(json: bytes, name: name).schema()
        } catch let error as DepotError {
            throw DepotError(
                .migrationRefused,
                "store \(JSONText.quoted(store)) keeps entity \(JSONText.quoted(name)), created over the API, "
                    + "which this release cannot read: \(error.message)")
        }
    }

    /// Refuses a store whose configuration declares an entity also created
    /// over the API: the two cannot share a name (DESIGN §18).
    package static func checkNames(configured: [EntitySchema], created: [EntitySchema], store: String) throws {
        let names = Set(configured.map(\.name))
        let both = created.map(\.name).filter { names.contains($0) }
        guard both.isEmpty else {
            throw DepotError(
                .migrationRefused,
                "store \(JSONText.quoted(store)): " + both.map { JSONText.quoted($0) }.joined(separator: ", ")
                    + " is declared in the configuration ([[store.entity]]) and was created over the API "
                    + "(PUT /v1/stores/\(store)/entities/NAME, kept in the store); an entity has one of the two: "
                    + "remove it from the configuration, or drop it over the API (DELETE, when it is empty)")
        }
    }

    /// A migration's refusal of a put, said of the entity rather than of the
    /// configuration.
    package static func refusal(_ error: any Error, entity: String, store: String) -> any Error {
        guard let e = error as? DepotError, e.code == .migrationRefused else { return error }
        let prefix = "store \(JSONText.quoted(store)) cannot open with this configuration: "
        guard e.message.hasPrefix(prefix) else { return error }
        return DepotError(
            .migrationRefused,
            "entity \(JSONText.quoted(entity)) of store \(JSONText.quoted(store)) cannot change so: "
                + e.message.dropFirst(prefix.count))
    }

    /// Refuses to put an entity of the configuration.
    package static func checkPut(_ entity: EntitySchema, in store: StoreSchema) throws {
        if store.entities.contains(where: { $0.name == entity.name }), !store.createdByAPI.contains(entity.name) {
            throw DepotError(
                .conflict,
                "entity \(JSONText.quoted(entity.name)) of store \(JSONText.quoted(store.name)) is declared in "
                    + "the configuration; change it there")
        }
    }

    /// The entity to drop: one created over the API.
    package static func checkDrop(_ name: String, in store: StoreSchema) throws -> EntitySchema {
        let entity = try store.entity(name)
        guard store.createdByAPI.contains(name) else {
            throw DepotError(
                .conflict,
                "entity \(JSONText.quoted(name)) of store \(JSONText.quoted(store.name)) is declared in the "
                    + "configuration; remove it there")
        }
        return entity
    }

    /// Refuses to drop an entity that holds records.
    package static func checkEmpty(_ entity: EntitySchema, count: Int) throws {
        guard count == 0 else {
            throw DepotError(
                .conflict,
                "entity \(JSONText.quoted(entity.name)) holds \(count) record\(count == 1 ? "" : "s"); "
                    + "delete them first (a delete job), then drop it")
        }
    }
}
