import DepotEngine
import DepotWire
import Foundation
package import Hummingbird
import NIOCore

/// What every route's context gives: the connection (a streamed answer
/// watches it) and its peer's credentials (who asks).
protocol ConnectionContext: RequestContext {
    var channel: any Channel { get }
    var peer: Peer? { get }
}

/// Each request's context: Hummingbird's core storage plus the connection,
/// whose peer credentials decide what the client may do.
package struct DepotRequestContext: ConnectionContext {
    package var coreContext: CoreRequestContextStorage
    let channel: any Channel
    var peer: Peer?
    /// The open stores and the configuration now, set by ``APIMiddleware``:
    /// what a route under `/v1/stores/{store}` resolves its store from
    /// (``StoreRequestContext``).
    var stores: StoreRegistry?
    var settings: LiveSettings?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Hummingbird's own body limit; uploads stream past it to the spool file.
    package var maxUploadSize: Int { 1 << 20 }
}

/// The context of a route under `/v1/stores/{store}`: the store the path
/// names, its save queue and its configuration, resolved once per request
/// when the route is matched (an unknown store is `404 unknown_store`
/// before any handler runs).
struct StoreRequestContext: ChildRequestContext, ConnectionContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel
    let peer: Peer?
    let store: any StoreBackend
    /// The store's saves, grouped into shared commits (DESIGN §16).
    let saves: SaveQueue
    /// The store's `[[store]]` as the last reload left it; nil for a store
    /// the configuration no longer names (it closes with the reload).
    let configuration: StoreConfiguration?

    init(context: DepotRequestContext) throws {
        guard let stores = context.stores else {
            throw APIError(.internal, "the request reached a store's route without the daemon's stores")
        }
        let name = context.parameters.get("store") ?? ""
        coreContext = context.coreContext
        channel = context.channel
        peer = context.peer
        store = try stores.require(name)
        saves = try stores.saves(name)
        configuration = context.settings?.current.stores.first { $0.name == name }
    }

    var maxUploadSize: Int { 1 << 20 }
}
