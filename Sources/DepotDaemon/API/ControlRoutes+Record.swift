import DepotEngine
import DepotWire
import Foundation
import HTTPTypes
import Hummingbird

/// One record (DESIGN §16): `GET`, `PUT`, `PATCH` and `DELETE` on
/// `/v1/stores/{store}/entities/{entity}/records/{id}`, with the token of
/// the record's last change as its `ETag`, and `If-Match` for optimistic
/// concurrency. The writes are one-change saves.
extension ControlRoutes {
    /// `GET …/records/{id}`: the record as a fetch gives it, its token as the `ETag`.
    func getRecord(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let (entity, identifier) = try Self.recordPath(context, reads: store.reads)
        guard let version = try await store.reads.record(entity.name, identifier: identifier) else {
            throw Self.missing(entity, identifier)
        }
        var response = JSONResponse.make(RecordSet(fields: entity.fields, rows: [version.values]).jsonObject(row: 0))
        response.headers[.eTag] = Self.etag(version.token)
        return response
    }

    /// `GET …/records/{id}/history`: the record's newest changes the
    /// history keeps (`limit`, default 100, at most 10,000), old → new, as a
    /// history page whose transactions hold only its changes. A record with
    /// none kept (or none ever) answers an empty list.
    func recordHistory(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let (entity, identifier) = try Self.recordPath(context, reads: store.reads)
        var limit = 100
        if let text = request.uri.queryParameters.get("limit") {
            limit = try QueryCount.parse(text, name: "limit", minimum: 1, cap: 10_000)
        }
        let page = try await store.reads.recordHistory(entity.name, identifier: identifier, limit: limit)
        return JSONResponse.make(StreamedJSON.transactionPage(page))
    }

    /// `PUT` (the whole record, replaced or inserted), `PATCH` (the fields
    /// to set) and `DELETE`: a save of one change, answered as a save is,
    /// the record's new token as the `ETag`. The engine's change is built
    /// here from the path's identifier (converted once, to its fields'
    /// types) and the body's values; the wire's save body is written only
    /// for an idempotency key's digest, as `POST …/save` of the same change
    /// would write it.
    func writeRecord(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let (entity, identifier) = try Self.recordPath(context, reads: store.reads)
        let ifToken = try Self.ifMatch(request)
        let kind: ChangeSet.Kind
        var fields: [String: JSONValue] = [:]
        switch request.method {
        case .delete:
            kind = .delete
        case .patch:
            kind = .update
            fields = try await JSONBody.decode([String: JSONValue].self, from: request, limit: config.maxRequestBytes)
        default:
            kind = .replace
            fields = try await JSONBody.decode([String: JSONValue].self, from: request, limit: config.maxRequestBytes)
            // The identifier is the path's; a body that names another is refused.
            for (name, value) in zip(entity.identifier, identifier) {
                let path = JSONValue(value)
                if let given = fields[name], given != path {
                    throw APIError(
                        .invalidArgument,
                        "the record's \(JSONText.quoted(name)) is \(given), but the path names \(path); "
                            + "a record's identifier is its path")
                }
                fields[name] = path
            }
        }
        var refused: [SaveRefusal.Failure] = []
        let values = Self.values(fields, of: entity, change: 0, refused: &refused)
        if !refused.isEmpty { throw SaveRefusal(failures: refused) }
        let change = ChangeSet.Change(
            kind, entity: entity.name, record: kind == .replace ? values : [:],
            identifier: kind == .replace ? [] : identifier, set: kind == .update ? values : [:], ifToken: ifToken)
        let merge = request.uri.queryParameters.get("merge").map { String($0) }
        let key = request.headers[.idempotencyKey]
        let answer: SaveAnswer
        let result: SaveResult?
        do {
            (answer, result) = try await save(
                ChangeSet([change], merge: try Self.mergePolicy(merge)), author: nil, idempotencyKey: key, context
            ) {
                // The digest of the save body that says the same change.
                let id = JSONValue(Identifier(identifier))
                var wire: SaveChange
                switch kind {
                case .delete: wire = SaveChange(.delete, entity: entity.name, identifier: id)
                case .update: wire = SaveChange(.update, entity: entity.name, identifier: id, set: fields)
                default: wire = SaveChange(.replace, entity: entity.name, record: fields)
                }
                wire.ifToken = ifToken?.description
                let body = SaveBody(merge: merge, changes: [wire])
                return ContentHash.of(bytes: Array(try WireJSON.encoder.encode(body)))
            }
        } catch let refusal as SaveRefusal where refusal.failures.allSatisfy({ $0.code == .notFound }) {
            throw Self.missing(entity, identifier)
        }
        var response = try JSONResponse.encode(answer)
        if request.method != .delete {
            // The record's token now: the save's, or, when it changed
            // nothing, the stored one as the save read it (read again only
            // for an answer replayed from its idempotency key).
            var token = answer.token.flatMap(HistoryToken.init) ?? result?.changes.first?.storedToken
            if token == nil { token = try await store.reads.record(entity.name, identifier: identifier)?.token }
            if let token { response.headers[.eTag] = Self.etag(token) }
        }
        return response
    }

    /// `"41"`: an ETag of a token.
    static func etag(_ token: HistoryToken) -> String { "\"\(token)\"" }

    /// The token of `If-Match` (`"41"`, `W/"41"` or `41`), nil without one or for `*`.
    static func ifMatch(_ request: Request) throws -> HistoryToken? { try ifMatch(request.headers[.ifMatch]) }

    /// The token of an `If-Match` header's value.
    static func ifMatch(_ header: String?) throws -> HistoryToken? {
        guard var text = header?.trimmingCharacters(in: .whitespaces), !text.isEmpty, text != "*"
        else { return nil }
        if text.hasPrefix("W/") { text.removeFirst(2) }
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
        guard let token = HistoryToken(text), token.isWhole else {
            throw APIError(
                .invalidArgument,
                "If-Match \(JSONText.quoted(header ?? "")) is not a record's ETag "
                    + "(a token in quotes, as GET gives it)")
        }
        return token
    }

    /// The entity and the identifier a record's path names: the identifier's
    /// value as text (a number or boolean as its JSON), a compound one as
    /// its JSON array, URL-encoded.
    static func recordPath(_ context: StoreRequestContext, reads: any StoreReading) throws
        -> (EntitySchema, [DepotEngine.Value])
    {
        let entity = try reads.entity(context.parameters.get("entity") ?? "")
        return (entity, try identifier(context.parameters.get("id") ?? "", of: entity))
    }

    /// The identifier of `entity` a path's last segment (`raw`, URL-encoded) names.
    static func identifier(_ raw: String, of entity: EntitySchema) throws -> [DepotEngine.Value] {
        // Most identifiers have no escape: Foundation's decoding is skipped for them.
        guard let text = raw.utf8.contains(UInt8(ascii: "%")) ? raw.removingPercentEncoding : raw else {
            throw APIError(.invalidArgument, "the record's identifier \(JSONText.quoted(raw)) is not URL-encoded text")
        }
        let fields = try entity.identifier.map { try entity.field(named: $0) }
        func refused() -> APIError {
            APIError(
                .invalidArgument,
                "\(JSONText.quoted(text)) is not an identifier of \(entity.name): "
                    + (fields.count == 1
                        ? "its \(fields[0].type.rawValue) field \(JSONText.quoted(fields[0].name))"
                        : "a JSON array of its \(fields.count) fields ("
                            + entity.identifier.joined(separator: ", ") + "), URL-encoded"))
        }
        let given: [DepotEngine.Value]
        if fields.count == 1 {
            switch fields[0].type {
            case .string, .date, .json: given = [.string(text)]
            default:
                guard let parsed = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
                    let v = parsed.scalar
                else { throw refused() }
                given = [v]
            }
        } else {
            guard let parsed = try? Identifier(json: text, fieldCount: fields.count) else { throw refused() }
            given = parsed.values
        }
        do {
            return try zip(fields, given).map { try ValueConversion.convert($1, to: $0) }
        } catch let error as DepotError {
            throw APIError(.invalidArgument, "\(refused().message); \(error.message)")
        }
    }

    static func missing(_ entity: EntitySchema, _ identifier: [DepotEngine.Value]) -> APIError {
        APIError(.notFound, "there is no \(entity.name) \(Identifier(identifier).json)")
    }
}

extension HTTPField.Name {
    static let idempotencyKey = Self("Idempotency-Key")!
}
