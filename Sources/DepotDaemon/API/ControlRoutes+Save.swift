import DepotEngine
import DepotWire
import Foundation
import Hummingbird

/// Saves (DESIGN §16): a change set applied all or nothing.
extension ControlRoutes {
    /// `POST /v1/stores/{store}/save`.
    func save(_ request: Request, _ context: DepotRequestContext) async throws -> Response {
        let store = try await store(context)
        let body = try await JSONBody.decode(SaveBody.self, from: request, limit: config.maxRequestBytes)
        let changeSet = try Self.changeSet(body, reads: store.reads)
        let author = body.author ?? context.peer.map { $0.userName ?? "uid:\($0.uid)" } ?? "depotd"
        let result = try await store.save(changeSet, author: author)
        return try JSONResponse.encode(Self.answer(result))
    }

    /// The engine's change set of a save's body: its values as the fields'
    /// values (an object or array only for a `json` field, as its text).
    static func changeSet(_ body: SaveBody, reads: any StoreReading) throws -> ChangeSet {
        var refused: [SaveRefusal.Failure] = []
        var changes: [ChangeSet.Change] = []
        for (index, change) in body.changes.enumerated() {
            let entity = try reads.entity(change.entity)
            if change.ifToken != nil {
                // Optimistic concurrency is the next step of issue 31: refused
                // rather than ignored, so that no client believes it is protected.
                refused.append(
                    .init(
                        index: index, code: .invalidValue, field: "if_token",
                        message: "if_token is not taken yet (optimistic concurrency comes with merge policies); "
                            + "send the change without it"))
            }
            func values(_ object: [String: JSONValue]?) -> [String: DepotEngine.Value] {
                var out: [String: DepotEngine.Value] = [:]
                for (name, value) in object ?? [:] {
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
                    record: values(change.record), identifier: identifier, set: values(change.set)))
        }
        if !refused.isEmpty { throw SaveRefusal(failures: refused) }
        return ChangeSet(changes)
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
