import DepotEngine
import Foundation
import Testing

/// Named consumers (DESIGN §11): durable cursors that hold pruning back.
@Suite("History consumers")
struct ConsumerTests {
    func trip(_ id: String, budget: Double = 1) -> [Value] {
        [.string(id), "n", "Oslo", "2025-01-01", nil, .double(budget), false, nil]
    }

    /// Commits `n` transactions, one record each; their tokens.
    func commit(_ t: TemporaryStore, _ n: Int, from start: Int = 0) async throws -> [HistoryToken] {
        var tokens: [HistoryToken] = []
        for i in start..<(start + n) { tokens.append(try #require(try await t.insertTrips([trip("t\(i)")]).token)) }
        return tokens
    }

    @Test("two consumers at different places; pruning stops at the slower one and says so; ack lets it go on")
    func heldBack() async throws {
        let t = try await TemporaryStore()
        let tokens = try await commit(t, 6)
        let slow = try await t.store.createConsumer("warehouse", from: .beginning)
        let fast = try await t.store.createConsumer("indexer", from: .after(tokens[3]))
        #expect(slow.token < tokens[0] && fast.token == tokens[3])
        #expect(try await t.store.reader.history(consumer: "warehouse").map(\.token) == tokens)
        #expect(try await t.store.reader.history(consumer: "indexer").map(\.token) == Array(tokens[4...]))
        // Reading does not move a consumer.
        #expect(try await t.store.reader.consumer("warehouse").token == slow.token)
        let lag = try await t.store.reader.consumers()
        #expect(lag.map(\.name) == ["indexer", "warehouse"])
        #expect(lag.map(\.lagTransactions) == [2, 6])
        #expect(lag.allSatisfy { $0.lagSeconds >= 0 && $0.state == .active })
        // The warehouse's oldest unacknowledged transaction is the older one.
        #expect(lag[1].lagSeconds >= lag[0].lagSeconds)

        // Nothing can go: the warehouse has read nothing.
        var pruned = try await t.store.pruneHistory(before: tokens[5])
        #expect(pruned.deleted == 0)
        #expect(pruned.heldBackBy?.consumer == "warehouse")
        // The warehouse acknowledges up to the second: those two may go.
        try await t.store.acknowledge(consumer: "warehouse", token: tokens[1])
        pruned = try await t.store.pruneHistory(before: tokens[5])
        #expect(pruned.deleted == 2)
        #expect(pruned.heldBackBy?.consumer == "warehouse" && pruned.heldBackBy?.token == tokens[1])
        #expect(try await t.store.reader.history().map(\.token) == Array(tokens[2...]))
        // Now the warehouse passes the indexer, which holds back in its turn.
        try await t.store.acknowledge(consumer: "warehouse", token: tokens[5])
        pruned = try await t.store.pruneHistory(olderThan: .zero)
        #expect(pruned.deleted == 2)
        #expect(pruned.heldBackBy?.consumer == "indexer" && pruned.heldBackBy?.token == tokens[3])
        // Dropping the indexer lets the rest go.
        try await t.store.dropConsumer("indexer")
        pruned = try await t.store.pruneHistory(olderThan: .zero)
        #expect(pruned.deleted == 2 && pruned.heldBackBy == nil)
        #expect(try await t.store.reader.consumers().map(\.name) == ["warehouse"])
    }

    @Test("ack: an older token is a no-op, a token never issued is refused; create and names are checked")
    func ackRules() async throws {
        let t = try await TemporaryStore()
        let tokens = try await commit(t, 3)
        try await t.store.createConsumer("c", from: .now)
        #expect(try await t.store.reader.consumer("c").token == tokens[2])
        #expect(try await t.store.reader.history(consumer: "c").isEmpty)
        let more = try await commit(t, 1, from: 3)
        try await t.store.acknowledge(consumer: "c", token: more[0])
        let unchanged = try await t.store.acknowledge(consumer: "c", token: tokens[0])
        #expect(unchanged.token == more[0])
        let never = await #expect(throws: DepotError.self) {
            try await t.store.acknowledge(consumer: "c", token: HistoryToken("999")!)
        }
        #expect(never?.code == .invalidToken)
        let taken = await #expect(throws: DepotError.self) { try await t.store.createConsumer("c", from: .now) }
        #expect(taken?.code == .conflict)
        for bad in ["", "-x", "a b", "a/b", String(repeating: "x", count: 129)] {
            let error = await #expect(throws: DepotError.self) { try await t.store.createConsumer(bad, from: .now) }
            #expect(error?.code == .invalidArgument)
        }
        let missing = await #expect(throws: DepotError.self) { try await t.store.reader.history(consumer: "d") }
        #expect(missing?.code == .unknownConsumer)
        #expect(missing?.message.contains("did you mean \"c\"") == true)
        let unknownStart = await #expect(throws: DepotError.self) {
            try await t.store.createConsumer("e", from: .after(HistoryToken("999")!))
        }
        #expect(unknownStart?.code == .invalidToken)
        #expect(throws: DepotError.self) { try Consumer.Start.parse("yesterday") }
        #expect(try Consumer.Start.parse("beginning") == .beginning)
    }

    @Test("history_max_retention marks a consumer lost, the prune goes on; reading it is history_expired until a reset")
    func lost() async throws {
        let t = try await TemporaryStore()
        let tokens = try await commit(t, 4)
        try await t.store.createConsumer("stuck", from: .beginning)
        try await t.store.createConsumer("live", from: .after(tokens[3]))
        try await t.store.close()
        // The stuck consumer's oldest transaction is older than the 90 days allowed.
        _ = try sqlite3(
            t.path,
            "UPDATE depot_transactions SET timestamp = '2020-01-01T00:00:00.000Z' "
                + "WHERE id <= \(tokens[1])")
        let reopened = try await TemporaryStore(folder: t.folder)
        let pruned = try await reopened.store.pruneHistory(before: tokens[3])
        #expect(pruned.lost == ["stuck"])
        #expect(pruned.deleted == 3)
        #expect(pruned.heldBackBy == nil)
        let stuck = try await reopened.store.reader.consumer("stuck")
        #expect(stuck.state == .lost)
        #expect(try await reopened.store.reader.consumer("live").state == .active)
        let expired = await #expect(throws: DepotError.self) {
            try await reopened.store.reader.history(consumer: "stuck")
        }
        #expect(expired?.code == .historyExpired)
        #expect(expired?.message.contains("consumer \"stuck\"") == true)
        let ack = await #expect(throws: DepotError.self) {
            try await reopened.store.acknowledge(consumer: "stuck", token: tokens[3])
        }
        #expect(ack?.code == .historyExpired)
        // A lost consumer no longer holds anything back.
        #expect(try await reopened.store.pruneHistory(before: tokens[3]).heldBackBy == nil)
        // The way out: a reset, from the beginning of what is kept.
        let reset = try await reopened.store.resetConsumer("stuck", from: .beginning)
        #expect(reset.state == .active)
        #expect(try await reopened.store.reader.history(consumer: "stuck").map(\.token) == [tokens[3]])
        // A start that was pruned is refused.
        let gone = await #expect(throws: DepotError.self) {
            try await reopened.store.resetConsumer("stuck", from: .after(tokens[0]))
        }
        #expect(gone?.code == .historyExpired)
    }

    @Test("consumers live in the store file: they survive a restart with their tokens and states")
    func restart() async throws {
        let t = try await TemporaryStore()
        let tokens = try await commit(t, 3)
        try await t.store.createConsumer("a", from: .beginning)
        try await t.store.createConsumer("b", from: .beginning)
        try await t.store.acknowledge(consumer: "b", token: tokens[1])
        let before = try await t.store.reader.consumers()
        try await t.store.close()
        #expect(
            try sqlite3(t.path, "SELECT name || ':' || token FROM depot_consumers ORDER BY name")
                == "a:0\nb:\(tokens[1])")
        let reopened = try await TemporaryStore(folder: t.folder)
        let after = try await reopened.store.reader.consumers()
        #expect(after.map(\.name) == before.map(\.name))
        #expect(after.map(\.token) == before.map(\.token))
        #expect(after.map(\.acknowledgedAt) == before.map(\.acknowledgedAt))
        #expect(try await reopened.store.pruneHistory(before: tokens[2]).heldBackBy?.consumer == "a")
    }
}
