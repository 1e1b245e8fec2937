import DepotEngine
import DepotWire
import Foundation
import Hummingbird

/// The consumers of DESIGN §11: durable cursors over a store's history.
extension ControlRoutes {
    static func consumerJSON(_ c: Consumer) -> String {
        "{\"name\":\(JSONText.quoted(c.name)),\"token\":\(JSONText.quoted(c.token.description)),"
            + "\"lag_transactions\":\(c.lagTransactions),\"lag_seconds\":\(JSONText.number((c.lagSeconds * 1000).rounded() / 1000)),"
            + "\"acknowledged_at\":\(JSONText.quoted(c.acknowledgedAt)),\"state\":\"\(c.state.rawValue)\"}"
    }

    /// The answer of a prune: how many transactions went, what held it back.
    static func pruneJSON(_ p: PruneOutcome) -> String {
        var s = "{\"pruned\":\(p.deleted)"
        if let held = p.heldBackBy {
            s +=
                ",\"held_back_by\":{\"consumer\":\(JSONText.quoted(held.consumer)),"
                + "\"token\":\(JSONText.quoted(held.token.description))}"
        }
        if !p.lost.isEmpty { s += ",\"lost\":[" + p.lost.map(JSONText.quoted).joined(separator: ",") + "]" }
        return s + "}"
    }

    func listConsumers(_ context: DepotRequestContext) async throws -> Response {
        let consumers = try await store(context).reads.consumers()
        return JSONResponse.make("{\"consumers\":[" + consumers.map(Self.consumerJSON).joined(separator: ",") + "]}")
    }

    func createConsumer(_ request: Request, _ context: DepotRequestContext) async throws -> Response {
        let store = try await store(context)
        let body = try await JSONBody.decode(ConsumerBody.self, from: request, limit: config.maxRequestBytes)
        guard let name = body.name else {
            throw APIError(.invalidArgument, "the body must name the consumer: {\"name\": \"indexer\"}")
        }
        let consumer = try await store.createConsumer(name, from: try body.start())
        return JSONResponse.make(Self.consumerJSON(consumer), status: .created)
    }

    func acknowledge(_ request: Request, _ context: DepotRequestContext) async throws -> Response {
        let store = try await store(context)
        let body = try await JSONBody.decode(AckBody.self, from: request, limit: config.maxRequestBytes)
        let consumer = try await store.acknowledge(
            consumer: context.parameters.get("name") ?? "",
            token: try HistoryToken.parseWhole(body.token, for: "an acknowledgement"))
        return JSONResponse.make(Self.consumerJSON(consumer))
    }

    func resetConsumer(_ request: Request, _ context: DepotRequestContext) async throws -> Response {
        let store = try await store(context)
        let body = try await JSONBody.decode(ConsumerBody.self, from: request, limit: config.maxRequestBytes)
        let consumer = try await store.resetConsumer(context.parameters.get("name") ?? "", from: try body.start())
        return JSONResponse.make(Self.consumerJSON(consumer))
    }

    func dropConsumer(_ context: DepotRequestContext) async throws -> Response {
        let name = context.parameters.get("name") ?? ""
        try await store(context).dropConsumer(name)
        return JSONResponse.make("{\"dropped\":\(JSONText.quoted(name))}")
    }
}
