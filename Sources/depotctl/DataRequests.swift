import DepotClient
import Foundation

/// An entity's schema as the daemon describes it; for an entity the store
/// does not have, the daemon's error, which names the closest one.
func entitySchema(_ client: DaemonClient, store: String, entity: String) async throws -> EntityInfo {
    if let e = try await client.store(store).entity(entity) { return e }
    _ = try await client.count(FetchRequest(store: store, entity: entity))
    throw Failure("store \(store) has no entity \(entity)")
}
