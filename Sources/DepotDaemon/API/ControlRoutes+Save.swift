import DepotEngine
import DepotWire
import Foundation
import Hummingbird

/// Saves (DESIGN §16): a change set applied all or nothing.
extension ControlRoutes {
    /// `POST /v1/stores/{store}/save`.
    func save(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let body = try await JSONBody.decode(SaveBody.self, from: request, limit: saveBodyLimit(context))
        return try JSONResponse.encode(try await save(body, context).answer)
    }

    /// The most bytes a save's (or a processor commit's) body may have:
    /// `max_request_bytes`, or 1 KiB a change when `max_save_changes` of
    /// them need more (issue 51: 10,000 of the smallest inserts were more
    /// than 1 MiB, so the store's limit of changes could not be reached).
    func saveBodyLimit(_ context: StoreRequestContext) -> Int {
        let changes = context.configuration?.maxSaveChanges ?? 10_000
        return max(config.maxRequestBytes, changes * 1024)
    }

    /// Applies a save's body to the request's store, by its author or the peer; with
    /// an idempotency key, once (a retry answers the first answer, replayed).
    ///
    /// - Returns: the answer, and the engine's result when the save ran now
    ///   (not replayed).
    func save(_ body: SaveBody, _ context: StoreRequestContext) async throws -> (
        answer: SaveAnswer, result: SaveResult?
    ) {
        let changeSet = try Self.changeSet(body, reads: context.store.reads)
        return try await save(changeSet, author: body.author, idempotencyKey: body.idempotencyKey, context) {
            // The request's digest: its body written again in one canonical
            // form (sorted keys), the key itself aside.
            var canonical = body
            canonical.idempotencyKey = nil
            return ContentHash.of(bytes: Array(try WireJSON.encoder.encode(canonical)))
        }
    }

    /// Applies the engine's change set (a save's body's, or a record
    /// route's, built directly) by `author` or the peer; with an idempotency
    /// key, once, `digest` telling a retry from another request.
    func save(
        _ changeSet: ChangeSet, author: String?, idempotencyKey key: String?, _ context: StoreRequestContext,
        digest: () throws -> String
    ) async throws -> (answer: SaveAnswer, result: SaveResult?) {
        let started = ContinuousClock.now
        defer {
            let elapsed = (ContinuousClock.now - started).components
            metrics.saveAnswered(seconds: Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
        }
        let author = author ?? context.peer.map { $0.userName ?? "uid:\($0.uid)" } ?? "depotd"
        let settings = context.configuration
        let limit = settings?.maxSaveChanges ?? 10_000
        let saves = context.saves
        guard let key else {
            let reply = try await saves.save(SaveRequest(changeSet, author: author, limit: limit))
            return (Self.answer(reply.result!), reply.result)
        }
        guard !key.isEmpty, key.utf8.count <= 255 else {
            throw APIError(.invalidArgument, "an idempotency key is 1 to 255 bytes of text")
        }
        let reply = try await saves.save(
            SaveRequest(
                changeSet, author: author, limit: limit,
                idempotency: IdempotencyKey(
                    key: key, digest: try digest(), retention: settings?.idempotencyRetention ?? .seconds(86_400))
            ) { result in
                String(decoding: try WireJSON.encoder.encode(Self.answer(result)), as: UTF8.self)
            })
        var answer = try JSONDecoder().decode(SaveAnswer.self, from: Data((reply.answer ?? "").utf8))
        answer.replayed = reply.replayed
        return (answer, reply.result)
    }

    /// The engine's change set of a save's body: its values as the fields'
    /// values (an object or array only for a `json` field, as its text).
    static func changeSet(_ body: SaveBody, reads: any StoreReading) throws -> ChangeSet {
        var refused: [SaveRefusal.Failure] = []
        var changes: [ChangeSet.Change] = []
        for (index, change) in body.changes.enumerated() {
            let entity = try reads.entity(change.entity)
            var ifToken: HistoryToken?
            if let text = change.ifToken {
                ifToken = HistoryToken(text)
                if ifToken == nil {
                    refused.append(
                        .init(
                            index: index, code: .invalidValue, field: "if_token",
                            message: "if_token \(JSONText.quoted(text)) is not a token (tokens are numbers, as a save "
                                + "or the history gives them)"))
                }
            }
            func values(_ object: [String: JSONValue]?) -> [String: DepotEngine.Value] {
                Self.values(object ?? [:], of: entity, change: index, refused: &refused)
            }
            var identifier: [DepotEngine.Value] = []
            if let given = change.identifier {
                let parts = entity.identifier.count > 1 ? given.array ?? [given] : [given]
                for part in parts {
                    guard let scalar = part.scalar else {
                        refused.append(
                            .init(
                                index: index, code: .invalidValue, field: nil,
                                message: "an identifier is a value, or an array of values for a compound one"))
                        break
                    }
                    identifier.append(scalar)
                }
            } else if change.kind == .update || change.kind == .delete {
                refused.append(
                    .init(
                        index: index, code: .invalidValue, field: nil,
                        message: "a \(change.kind.rawValue) names its record's identifier"))
            }
            if change.kind == .insert || change.kind == .upsert || change.kind == .replace, change.record == nil {
                refused.append(
                    .init(
                        index: index, code: .invalidValue, field: nil,
                        message: "an \(change.kind.rawValue) gives its record"))
            }
            changes.append(
                ChangeSet.Change(
                    ChangeSet.Kind(rawValue: change.kind.rawValue)!, entity: entity.name,
                    record: values(change.record), identifier: identifier, set: values(change.set),
                    ifToken: ifToken))
        }
        if !refused.isEmpty { throw SaveRefusal(failures: refused) }
        return ChangeSet(changes, merge: try mergePolicy(body.merge))
    }

    /// The merge policy a save names (`merge`), `error` when it names none.
    static func mergePolicy(_ name: String?) throws -> ChangeSet.MergePolicy {
        guard let name else { return .error }
        guard let policy = ChangeSet.MergePolicy(rawValue: name) else {
            throw APIError(
                .invalidArgument,
                "merge \(JSONText.quoted(name)) is not a merge policy; one of "
                    + ChangeSet.MergePolicy.allCases.map { JSONText.quoted($0.rawValue) }.joined(separator: ", "))
        }
        return policy
    }

    /// A change's JSON fields as the engine's values: a scalar as itself,
    /// an object or array only for a `json` field (as its text); any other
    /// added to `refused` for change `index`.
    static func values(
        _ object: [String: JSONValue], of entity: EntitySchema, change index: Int,
        refused: inout [SaveRefusal.Failure]
    ) -> [String: DepotEngine.Value] {
        var out: [String: DepotEngine.Value] = [:]
        for (name, value) in object {
            if let scalar = value.scalar {
                out[name] = scalar
            } else if (try? entity.field(named: name))?.type == .json {
                out[name] = .string(value.text)
            } else {
                refused.append(
                    .init(
                        index: index, code: .invalidValue, field: name,
                        message: "field \(JSONText.quoted(name)) of \(entity.name) takes a value, "
                            + "not an \(value.array != nil ? "array" : "object")"))
            }
        }
        return out
    }

    /// The answer of an applied save.
    static func answer(_ result: SaveResult) -> SaveAnswer {
        SaveAnswer(
            token: result.token?.description,
            changes: result.changes.map {
                SaveAnswer.Outcome(
                    index: $0.index, entity: $0.entity, identifier: JSONValue(Identifier($0.identifier)),
                    kind: $0.kind.rawValue, effect: $0.effect.rawValue)
            })
    }
}
