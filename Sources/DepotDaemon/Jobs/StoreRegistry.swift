package import DepotEngine
import Synchronization

/// The stores the daemon serves, by name: read by every request without
/// waiting on the job actor (issue #30), written when a store opens (at
/// start and on a reload).
package final class StoreRegistry: Sendable {
    private let stores = Mutex<[String: any StoreBackend]>([:])
    /// Each store's saves, grouped into shared commits (DESIGN §16).
    private let queues = Mutex<[String: SaveQueue]>([:])

    package init() {}

    /// The store named `name`, if open.
    package func store(_ name: String) -> (any StoreBackend)? { stores.withLock { $0[name] } }

    /// The store named `name`, or ``JobRefusal/unknownStore(_:open:)``
    /// with the closest name open.
    package func require(_ name: String) throws -> any StoreBackend {
        guard let store = store(name) else { throw JobRefusal.unknownStore(name, open: names) }
        return store
    }

    /// The names of the open stores, sorted.
    package var names: [String] { stores.withLock { $0.keys.sorted() } }

    /// The open stores, in the order of their names.
    package var all: [any StoreBackend] { stores.withLock { s in s.keys.sorted().map { s[$0]! } } }

    /// The stores several hosts serve: their jobs may run on another host,
    /// unknown here but for their record in the store (issue #35).
    package var shared: [any StoreBackend] { all.filter { $0.jobs.pollInterval != nil } }

    package var count: Int { stores.withLock { $0.count } }

    /// Adds `store`, or replaces the one of its name.
    package func add(_ store: any StoreBackend) {
        queues.withLock { $0[store.name] = SaveQueue(store) }
        stores.withLock { $0[store.name] = store }
    }

    /// The save queue of the store named `name`, or ``JobRefusal/unknownStore(_:open:)``.
    package func saves(_ name: String) throws -> SaveQueue {
        guard let queue = queues.withLock({ $0[name] }) else { throw JobRefusal.unknownStore(name, open: names) }
        return queue
    }
}
