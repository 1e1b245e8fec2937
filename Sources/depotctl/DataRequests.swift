import DepotClient
import Foundation
import NIOHTTP1

/// The entity's description (fields in their order), from `GET /v1/stores/S`.
func entitySchema(_ client: DaemonClient, store: String, entity: String) async throws -> StoreList.Store.Entity {
    let s = try await client.json(StoreList.Store.self, .GET, "/v1/stores/\(store.encoded)")
    if let e = s.entities.first(where: { $0.name == entity }) { return e }
    // The daemon names the closest entity in its error.
    _ = try await client.call(
        .POST, "/v1/stores/\(store.encoded)/entities/\(entity.encoded)/fetch",
        body: .bytes(Array(#"{"result":"count"}"#.utf8), contentType: "application/json"))
    throw Failure("store \(store) has no entity \(entity)")
}

extension StoreList.Store.Entity {
    /// The columns of a table of records: the identifier first, then the other fields.
    var columns: [String] { identifier + fields.map(\.name).filter { !identifier.contains($0) } }
}

func dataPath(_ store: String, _ entity: String, _ action: String) -> String {
    "/v1/stores/\(store.encoded)/entities/\(entity.encoded)/\(action)"
}

func post(_ client: DaemonClient, _ path: String, _ body: [String: JSONValue]) async throws -> [UInt8] {
    try await client.call(.POST, path, body: .json(body))
}
