import DepotEngine
import Foundation
import Testing

@Suite("History")
struct HistoryTests {
    func trip(_ id: String, budget: Double = 1) -> [Value] {
        [.string(id), "n", "Oslo", "2025-01-01", nil, .double(budget), false, nil]
    }

    @Test("every insert, update and delete is logged exactly once; unchanged records never")
    func exactness() async throws {
        let t = try await TemporaryStore()
        let a = try await t.insertTrips([trip("a"), trip("b"), trip("c")], author: "alice", job: "j1")
        let b = try await t.insertTrips([trip("a"), trip("b", budget: 2), trip("d")], author: "bob")
        let none = try await t.insertTrips([trip("a"), trip("b", budget: 2)], author: "bob")
        try await t.store.delete(entity: "Trip", where: "id IN {'c', 'zz'}", author: "alice")
        #expect(none.token == nil)
        let history = try await t.store.reader.history()
        #expect(history.map(\.author) == ["alice", "bob", "alice"])
        #expect(history[0].job == "j1")
        #expect(history[0].token == a.token)
        #expect(history[1].token == b.token)
        #expect(
            history.map { $0.changes.map { "\($0.kind.rawValue) \($0.identifier)" } } == [
                [#"insert "a""#, #"insert "b""#, #"insert "c""#],
                [#"update "b""#, #"insert "d""#],
                [#"delete "c""#]
            ])
        #expect(history[1].changes[0].fields == ["budget"])
        #expect(history[2].changes[0].tombstone == #"{"id":"c","name":"n"}"#)
        #expect(history.allSatisfy { DateValue.canonical($0.timestamp) == $0.timestamp })
        // The default, history = "fields", keeps no values.
        #expect(history.flatMap(\.changes).allSatisfy { $0.old == nil && $0.new == nil })
        // The log as sqlite3 sees it: one row per change.
        #expect(try sqlite3(t.path, "SELECT count(*) FROM depot_changes") == "6")
    }

    @Test("reading after a token, by entity, by author, with a limit")
    func paging() async throws {
        let other = try EntitySchema(
            name: "Note",
            fields: [
                Field(name: "id", type: .int),
                Field(name: "text", type: .string)
            ], identifier: ["id"])
        let t = try await TemporaryStore(entities: [try TemporaryStore.tripEntity(), other])
        var tokens: [HistoryToken] = []
        for i in 0..<5 {
            tokens.append(try await t.insertTrips([trip("t\(i)")], author: i % 2 == 0 ? "even" : "odd").token!)
        }
        var notes = RecordBatch(entity: "Note", columns: ["id", "text"])
        notes.append([1, "hello"])
        let frozen = notes
        let noteToken = try await t.store.save(author: "even") { try $0.write(frozen, policy: .upsert) }.token!
        #expect(tokens == tokens.sorted())
        let after = try await t.store.reader.history(after: tokens[1])
        #expect(after.map(\.token) == Array(tokens[2...]) + [noteToken])
        let page = try await t.store.reader.history(after: tokens[0], limit: 2)
        #expect(page.map(\.token) == [tokens[1], tokens[2]])
        let next = try await t.store.reader.history(after: page.last!.token, limit: 2)
        #expect(next.map(\.token) == [tokens[3], tokens[4]])
        #expect(try await t.store.reader.history(entity: "Note").map(\.token) == [noteToken])
        #expect(try await t.store.reader.history(author: "even", limit: 10).count == 4)
        #expect(try await t.store.reader.history(after: noteToken).isEmpty)
        #expect(try await t.store.reader.latestToken() == noteToken)
        await #expect(throws: DepotError.self) { try await t.store.reader.history(entity: "Nope") }
    }

    @Test("a token the store never issued, or that is not a token, is refused")
    func invalidTokens() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a")])
        let error = await #expect(throws: DepotError.self) {
            try await t.store.reader.history(after: HistoryToken("999")!)
        }
        #expect(error?.code == .invalidToken)
        #expect(throws: DepotError.self) { try HistoryToken.parse("abc") }
        #expect(HistoryToken("-1") == nil)
    }

    @Test("after pruning, a pruned token is an explicit error, never a silent gap")
    func pruneBefore() async throws {
        let t = try await TemporaryStore()
        var tokens: [HistoryToken] = []
        for i in 0..<4 { tokens.append(try await t.insertTrips([trip("p\(i)")]).token!) }
        let pruned = try await t.store.pruneHistory(before: tokens[2]).deleted
        #expect(pruned == 2)
        // The client that saw tokens[1] missed nothing: it gets 2 and 3.
        #expect(try await t.store.reader.history(after: tokens[1]).map(\.token) == [tokens[2], tokens[3]])
        // The client that saw only tokens[0] missed tokens[1]: expired.
        let error = await #expect(throws: DepotError.self) { try await t.store.reader.history(after: tokens[0]) }
        #expect(error?.code == .historyExpired)
        // From the beginning means from the oldest kept.
        #expect(try await t.store.reader.history().map(\.token) == [tokens[2], tokens[3]])
        #expect(try sqlite3(t.path, "SELECT count(*) FROM depot_changes") == "2")
        // Pruning again before the same token does nothing.
        #expect(try await t.store.pruneHistory(before: tokens[2]).deleted == 0)
        // Tokens are never reused after pruning.
        let next = try await t.insertTrips([trip("p9")]).token!
        #expect(next > tokens[3])
    }

    @Test("a large prune goes in saves of about historyPruneStep changes, a transaction's changes together")
    func pruneInSteps() async throws {
        let t = try await TemporaryStore { $0.historyPruneStep = 4 }
        var tokens: [HistoryToken] = []
        for i in 0..<10 {
            tokens.append(try #require(try await t.insertTrips([trip("a\(i)"), trip("b\(i)"), trip("c\(i)")]).token))
        }
        let pruned = try await t.store.pruneHistory(before: tokens[9])
        #expect(pruned.deleted == 9)
        // 3 changes a transaction, about 4 a save: 2 transactions a save.
        #expect(pruned.saves == 5)
        #expect(try await t.store.reader.history().map(\.token) == [tokens[9]])
        #expect(try sqlite3(t.path, "SELECT count(*) FROM depot_changes") == "3")
        #expect(
            try sqlite3(t.path, "SELECT value FROM depot_meta WHERE key = 'history_pruned_through'")
                == tokens[8].description)
        // A consumer stops a stepped prune where it stands.
        let more = try await t.insertTrips([trip("d")]).token!
        try await t.store.createConsumer("c", from: .beginning)
        let held = try await t.store.pruneHistory(before: more)
        #expect(held.deleted == 0 && held.saves == 0 && held.heldBackBy?.consumer == "c")
        try await t.store.acknowledge(consumer: "c", token: tokens[9])
        #expect(try await t.store.pruneHistory(before: more).deleted == 1)
    }

    @Test("pruning by age and by the configured retention")
    func pruneByAge() async throws {
        let folder = try TemporaryStore.makeFolder()
        let path = folder.appendingPathComponent("test.sqlite").path
        let config = StoreConfiguration(
            name: "travel", path: path, entities: [try TemporaryStore.tripEntity()],
            historyRetention: .seconds(86_400))
        let store = try await Store.open(config)
        defer { try? FileManager.default.removeItem(at: folder) }
        for id in ["old", "new"] {
            var batch = RecordBatch(entity: "Trip", columns: TemporaryStore.tripColumns)
            batch.append(trip(id))
            let frozen = batch
            _ = try await store.save(author: "t") { try $0.write(frozen, policy: .upsert) }
        }
        // Age the first transaction by two days, as another tool would see it.
        _ = try sqlite3(path, "UPDATE depot_transactions SET timestamp = '2000-01-01T00:00:00.000Z' WHERE id = 1")
        #expect(try await store.pruneHistory(olderThan: .seconds(7 * 86_400)).deleted == 1)
        #expect(try await store.applyHistoryRetention().deleted == 0)
        let kept = try await store.reader.history()
        #expect(kept.map { $0.changes[0].identifier } == [#""new""#])
        try await store.close()
    }

    @Test("following yields the existing transactions, then each new one as it commits")
    func follow() async throws {
        let t = try await TemporaryStore()
        let first = try await t.insertTrips([trip("f0")]).token!
        let second = try await t.insertTrips([trip("f1")]).token!
        var iterator = t.store.reader.followHistory(after: first).makeAsyncIterator()
        #expect(try await iterator.next()?.token == second)
        // Nothing new yet: the follower waits for the next commit.
        let store = t.store
        let writer = Task {
            var tokens: [HistoryToken] = []
            for i in 2..<5 {
                var batch = RecordBatch(entity: "Trip", columns: TemporaryStore.tripColumns)
                batch.append(trip("f\(i)"))
                let frozen = batch
                tokens.append(try await store.save(author: "w") { try $0.write(frozen, policy: .upsert) }.token!)
            }
            return tokens
        }
        var followed: [HistoryToken] = []
        while followed.count < 3, let next = try await iterator.next() { followed.append(next.token) }
        #expect(followed == (try await writer.value))
    }

    @Test("a follower filtered by entity skips other entities' transactions")
    func followFiltered() async throws {
        let other = try EntitySchema(name: "Note", fields: [Field(name: "id", type: .int)], identifier: ["id"])
        let t = try await TemporaryStore(entities: [try TemporaryStore.tripEntity(), other])
        try await t.insertTrips([trip("x")])
        var notes = RecordBatch(entity: "Note", columns: ["id"])
        notes.append([7])
        let frozen = notes
        let noteToken = try await t.store.save(author: "n") { try $0.write(frozen, policy: .upsert) }.token
        var iterator = t.store.reader.followHistory(entity: "Note").makeAsyncIterator()
        let got = try await iterator.next()
        #expect(got?.token == noteToken)
        #expect(got?.changes.map(\.entity) == ["Note"])
    }

    @Test("a follower ends when its task is cancelled or the store closes")
    func followEnds() async throws {
        let t = try await TemporaryStore()
        let reader = t.store.reader
        let cancelled = Task { () -> Int in
            var n = 0
            for try await _ in reader.followHistory() { n += 1 }
            return n
        }
        cancelled.cancel()
        #expect(try await cancelled.value == 0)
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let closing = Task { () -> Int in
            var n = 0
            var iterator = reader.followHistory().makeAsyncIterator()
            startedContinuation.yield()
            while try await iterator.next() != nil { n += 1 }
            return n
        }
        for await _ in started { break }
        try await t.store.close()
        #expect(try await closing.value == 0)
    }
}
