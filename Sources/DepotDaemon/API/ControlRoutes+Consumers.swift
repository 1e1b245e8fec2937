import DepotEngine
import DepotWire
import Foundation
import Hummingbird

/// The consumers of DESIGN §11: durable cursors over a store's history.
extension ControlRoutes {
    /// Where a consumer created or reset starts: `now` unless the body says.
    static func start(_ body: ConsumerBody) throws -> DepotEngine.Consumer.Start {
        try DepotEngine.Consumer.Start.parse(body.from ?? "now")
    }

    /// A consumer as the API shows it.
    static func wire(_ c: DepotEngine.Consumer) -> DepotWire.Consumer {
        DepotWire.Consumer(
            name: c.name, token: c.token.description, lagTransactions: c.lagTransactions,
            lagSeconds: (c.lagSeconds * 1000).rounded() / 1000, acknowledgedAt: c.acknowledgedAt,
            state: c.state.rawValue)
    }

    /// The answer of a prune: how many transactions went, what held it back.
    static func pruneAnswer(_ p: PruneOutcome) -> PruneAnswer {
        PruneAnswer(
            pruned: p.deleted,
            heldBackBy: p.heldBackBy.map { Job.HeldBack(consumer: $0.consumer, token: $0.token.description) },
            lost: p.lost.isEmpty ? nil : p.lost)
    }

    func listConsumers(_ context: StoreRequestContext) async throws -> Response {
        let consumers = try await context.store.reads.consumers()
        return try JSONResponse.encode(ConsumerList(consumers: consumers.map(Self.wire)))
    }

    func createConsumer(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(ConsumerBody.self, from: request, limit: config.maxRequestBytes)
        guard let name = body.name else {
            throw APIError(.invalidArgument, "the body must name the consumer: {\"name\": \"indexer\"}")
        }
        let consumer = try await store.createConsumer(name, from: try Self.start(body))
        return try JSONResponse.encode(Self.wire(consumer), status: .created)
    }

    func acknowledge(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(AckBody.self, from: request, limit: config.maxRequestBytes)
        let consumer = try await store.acknowledge(
            consumer: context.parameters.get("name") ?? "",
            token: try HistoryToken.parseWhole(body.token, for: "an acknowledgement"))
        return try JSONResponse.encode(Self.wire(consumer))
    }

    func resetConsumer(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(ConsumerBody.self, from: request, limit: config.maxRequestBytes)
        let consumer = try await store.resetConsumer(context.parameters.get("name") ?? "", from: try Self.start(body))
        return try JSONResponse.encode(Self.wire(consumer))
    }

    func dropConsumer(_ context: StoreRequestContext) async throws -> Response {
        let name = context.parameters.get("name") ?? ""
        try await context.store.dropConsumer(name)
        return try JSONResponse.encode(DroppedConsumer(dropped: name))
    }
}
