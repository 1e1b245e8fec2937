import Foundation
import NIOHTTP1

/// A program's model of an entity's records (DESIGN §16): a `Codable` type
/// that names its entity and its identifier's fields, saved and read with
/// ``DepotClient/save(store:merge:idempotencyKey:author:_:)`` and
/// ``DepotClient/record(_:id:store:)``. Its coded keys are the fields' names;
/// a date is its ISO 8601 text.
///
/// ```swift
/// struct Trip: DepotModel {
///     static let entity = "Trip"
///     var id: String, name: String, startDate: String, budget: Double, isFavorite: Bool
/// }
/// ```
public protocol DepotModel: Codable, Sendable {
    /// The entity's name.
    static var entity: String { get }
    /// The identifier's fields, in order: `["id"]` unless the model says otherwise.
    static var identifierFields: [String] { get }
}

extension DepotModel {
    /// `["id"]`.
    public static var identifierFields: [String] { ["id"] }

    /// The model as a record's fields.
    func fields() throws -> [String: JSONValue] {
        guard case .object(let fields) = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(self))
        else { throw DepotClientError(.invalidArgument, "\(Self.self) does not encode as a JSON object") }
        return fields
    }

    /// The model's identifier: its value, or the array of a compound one's.
    func identifier() throws -> JSONValue {
        let fields = try fields()
        let values = try Self.identifierFields.map { name in
            guard let value = fields[name] else {
                throw DepotClientError(.invalidArgument, "\(Self.self) has no identifier field \"\(name)\"")
            }
            return value
        }
        return values.count == 1 ? values[0] : .array(values)
    }
}

/// A stored record and the token of its last change (its `ETag`): the
/// token to save it back with (`ifToken`), and the one under which live
/// queries and the history show it.
///
/// ```swift
/// if let trip = try await client.record(store: "travel", entity: "Trip", id: "T1") { print(trip.token) }
/// ```
public struct StoredRecord<Value: Sendable>: Sendable {
    /// The record.
    ///
    /// ```swift
    /// print(stored.value)
    /// ```
    public var value: Value
    /// The token of its last change.
    ///
    /// ```swift
    /// try await client.patch(store: "travel", entity: "Trip", id: "T1", ["budget": 1], ifToken: stored.token)
    /// ```
    public var token: String
}

/// The changes of a save, built by ``DepotClient/save(store:merge:idempotencyKey:author:_:)``'s closure.
///
/// ```swift
/// try await client.save(store: "travel") { changes in
///     try changes.insert(Trip(id: "T9", name: "Oslo", startDate: "2025-06-01", budget: 700, isFavorite: false))
///     changes.update(Trip.self, id: "T1", set: ["budget": 950], ifToken: read.token)
///     changes.delete(Trip.self, id: "T2")
/// }
/// ```
public final class Changes {
    /// The changes so far, in order.
    ///
    /// ```swift
    /// print(changes.list.count)
    /// ```
    public private(set) var list: [SaveChange] = []

    init() {}

    /// Appends any change (an untyped one: `SaveChange(.insert, entity: "Trip", record: [...])`).
    ///
    /// ```swift
    /// changes.append(SaveChange(.delete, entity: "Trip", identifier: "T3"))
    /// ```
    public func append(_ change: SaveChange) { list.append(change) }

    /// A new record.
    ///
    /// ```swift
    /// try changes.insert(trip)
    /// ```
    public func insert<M: DepotModel>(_ model: M) throws {
        list.append(SaveChange(.insert, entity: M.entity, record: try model.fields()))
    }

    /// The record inserted, or its fields set on the stored one.
    ///
    /// ```swift
    /// try changes.upsert(trip)
    /// ```
    public func upsert<M: DepotModel>(_ model: M, ifToken: String? = nil) throws {
        list.append(SaveChange(.upsert, entity: M.entity, record: try model.fields(), ifToken: ifToken))
    }

    /// The record inserted, or put whole in place of the stored one.
    ///
    /// ```swift
    /// try changes.replace(trip, ifToken: read.token)
    /// ```
    public func replace<M: DepotModel>(_ model: M, ifToken: String? = nil) throws {
        list.append(SaveChange(.replace, entity: M.entity, record: try model.fields(), ifToken: ifToken))
    }

    /// Fields set on a stored record.
    ///
    /// ```swift
    /// changes.update(Trip.self, id: "T1", set: ["budget": 950], ifToken: read.token)
    /// ```
    public func update<M: DepotModel>(_ type: M.Type, id: JSONValue, set: [String: JSONValue], ifToken: String? = nil) {
        list.append(SaveChange(.update, entity: M.entity, identifier: id, set: set, ifToken: ifToken))
    }

    /// A stored record deleted, its delete rules applied.
    ///
    /// ```swift
    /// changes.delete(Trip.self, id: "T2")
    /// ```
    public func delete<M: DepotModel>(_ type: M.Type, id: JSONValue, ifToken: String? = nil) {
        list.append(SaveChange(.delete, entity: M.entity, identifier: id, ifToken: ifToken))
    }
}

/// One record (DESIGN §16): read with the token of its last change, and
/// written back with optimistic concurrency.
extension DepotClient {
    /// The path of one record: a compound identifier as its JSON array, URL-encoded.
    static func recordPath(store: String, entity: String, id: JSONValue) -> String {
        let text: String =
            switch id {
            case .string(let s): s
            default: id.text
            }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let escapedID = text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
        return "/v1/stores/\(escaped(store))/entities/\(escaped(entity))/records/\(escapedID)"
    }

    /// The token an `ETag` names.
    static func token(_ head: HTTPResponseHead?) -> String? {
        head?.headers.first(name: "ETag").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "W/\"")) }
    }

    /// One record and the token of its last change; nil when there is none.
    ///
    /// ```swift
    /// if let trip = try await client.record(store: "travel", entity: "Trip", id: "T1") {
    ///     print(trip.value["budget"] ?? .null, "at", trip.token)
    /// }
    /// ```
    public func record(store: String, entity: String, id: JSONValue) async throws -> StoredRecord<Record>? {
        var head: HTTPResponseHead?
        do {
            let bytes = try await call(
                .GET, Self.recordPath(store: store, entity: entity, id: id), onHead: { head = $0 })
            let fields = try Self.decode([String: JSONValue].self, bytes, answering: "GET \(entity) \(id.text)")
            return StoredRecord(value: Record(fields), token: Self.token(head) ?? "")
        } catch let error as DepotClientError where error.code == .notFound && error.status == 404 {
            return nil
        }
    }

    /// One record as a model, with the token of its last change; nil when there is none.
    ///
    /// ```swift
    /// let trip = try await client.record(Trip.self, id: "T1", store: "travel")
    /// ```
    public func record<M: DepotModel>(_ type: M.Type, id: JSONValue, store: String) async throws
        -> StoredRecord<M>?
    {
        guard let found = try await record(store: store, entity: M.entity, id: id) else { return nil }
        return StoredRecord(value: try found.value.decode(as: M.self), token: found.token)
    }

    /// Writes one record: `PUT` (`fields` the whole record), `PATCH` (the
    /// fields to set) or `DELETE`, a save of one change; its answer and the
    /// record's new token.
    ///
    /// - Throws: ``DepotClientError/Code/conflict`` with ``DepotClientError/conflicts``
    ///   when another save changed a field this one sets since `ifToken`;
    ///   ``DepotClientError/Code/notFound`` for a missing record.
    func writeRecord(
        _ method: HTTPMethod, store: String, entity: String, id: JSONValue, fields: [String: JSONValue]?,
        ifToken: String?, merge: String?, idempotencyKey: String?
    ) async throws -> (answer: SaveAnswer, token: String?) {
        var headers: [(String, String)] = []
        if let ifToken { headers.append(("If-Match", "\"\(ifToken)\"")) }
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        var path = Self.recordPath(store: store, entity: entity, id: id)
        if let merge { path += "?merge=\(Self.escaped(merge))" }
        var head: HTTPResponseHead?
        let bytes = try await call(
            method, path, body: fields.map(RequestBody.json) ?? .none, headers: headers, onHead: { head = $0 })
        return (try Self.decode(SaveAnswer.self, bytes, answering: "\(method) \(path)"), Self.token(head))
    }

    /// Sets fields of one stored record (`PATCH`); the answer and the record's new token.
    ///
    /// ```swift
    /// let read = try await client.record(store: "travel", entity: "Trip", id: "T1")!
    /// try await client.patch(store: "travel", entity: "Trip", id: "T1", ["budget": 950], ifToken: read.token)
    /// ```
    @discardableResult
    public func patch(
        store: String, entity: String, id: JSONValue, _ fields: [String: JSONValue], ifToken: String? = nil,
        merge: String? = nil, idempotencyKey: String? = nil
    ) async throws -> (answer: SaveAnswer, token: String?) {
        try await writeRecord(
            .PATCH, store: store, entity: entity, id: id, fields: fields, ifToken: ifToken, merge: merge,
            idempotencyKey: idempotencyKey)
    }

    /// Puts one record whole (`PUT`: replaced, or inserted); the answer and its new token.
    ///
    /// ```swift
    /// try await client.put(store: "travel", entity: "Trip", id: "T1", ["name": "Rome", "budget": 900])
    /// ```
    @discardableResult
    public func put(
        store: String, entity: String, id: JSONValue, _ fields: [String: JSONValue], ifToken: String? = nil,
        merge: String? = nil, idempotencyKey: String? = nil
    ) async throws -> (answer: SaveAnswer, token: String?) {
        try await writeRecord(
            .PUT, store: store, entity: entity, id: id, fields: fields, ifToken: ifToken, merge: merge,
            idempotencyKey: idempotencyKey)
    }

    /// Deletes one record (`DELETE`), its delete rules applied; the answer.
    ///
    /// ```swift
    /// try await client.delete(store: "travel", entity: "Trip", id: "T2")
    /// ```
    @discardableResult
    public func delete(
        store: String, entity: String, id: JSONValue, ifToken: String? = nil, merge: String? = nil,
        idempotencyKey: String? = nil
    ) async throws -> SaveAnswer {
        try await writeRecord(
            .DELETE, store: store, entity: entity, id: id, fields: nil, ifToken: ifToken, merge: merge,
            idempotencyKey: idempotencyKey
        ).answer
    }

    /// A save of the changes `build` makes (typed models or untyped
    /// changes), all or nothing; its answer (see ``save(store:_:)``).
    ///
    /// ```swift
    /// let answer = try await client.save(store: "travel", idempotencyKey: "import-42") { changes in
    ///     try changes.insert(trip)
    ///     changes.delete(Trip.self, id: "T2")
    /// }
    /// ```
    @discardableResult
    public func save(
        store: String, merge: String? = nil, idempotencyKey: String? = nil, author: String? = nil,
        _ build: (Changes) throws -> Void
    ) async throws -> SaveAnswer {
        let changes = Changes()
        try build(changes)
        return try await save(
            store: store, SaveBody(author: author, merge: merge, idempotencyKey: idempotencyKey, changes: changes.list))
    }
}
