import DepotEngine
import Foundation
import Testing

/// A fetch's result followed through the history (DESIGN §11).
@Suite("Live fetch with changes")
struct ResultFeedTests {
    func trip(_ id: String, destination: String = "Rome", budget: Double = 900, notes: Value = nil) -> [Value] {
        [.string(id), .string("Trip \(id)"), .string(destination), "2025-05-02", nil, .double(budget), false, notes]
    }

    func ids(_ set: RecordSet) -> [String] {
        set.rows.map { if case .string(let s) = $0[0] { s } else { "?" } }
    }

    @Test("records enter and leave by updates of the predicate's field, by inserts and by deletes")
    func enterAndLeave() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a"), trip("b"), trip("c", destination: "Oslo")])
        let feed = try ResultFeed(reader: t.store.reader, FetchDescriptor(entity: "Trip", where: "destination == 'Rome'"))
        let (token, records) = try await feed.start()
        #expect(ids(records) == ["a", "b"])
        #expect(token == (try await t.store.reader.latestToken()))

        // c moves to Rome (enters), a leaves it, b changes in place, d is new.
        try await t.insertTrips([trip("c"), trip("a", destination: "Paris"), trip("b", budget: 950), trip("d")])
        var changes = try await feed.changes()
        #expect(ids(changes.inserted) == ["c", "d"])
        #expect(ids(changes.updated) == ["b"])
        #expect(changes.updated.value("budget", row: 0) == 950.0)
        #expect(changes.deleted.map(\.json) == [#""a""#])
        #expect(changes.token == (try await t.store.reader.latestToken()))

        // A delete of a member leaves; a delete of a non-member says nothing.
        try await t.store.delete(entity: "Trip", where: "id IN {'b', 'a'}", author: "test")
        changes = try await feed.changes()
        #expect(changes.deleted.map(\.json) == [#""b""#])
        #expect(changes.inserted.count == 0 && changes.updated.count == 0)

        // Nothing new: an empty batch.
        #expect(try await feed.changes().isEmpty)
        // A change that does not touch the result is not an event.
        try await t.insertTrips([trip("z", destination: "Oslo")])
        #expect(try await feed.changes().isEmpty)
    }

    @Test("fetched fields only: an update of another field is no event; records carry their identifier")
    func projection() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a"), trip("b")])
        let feed = try ResultFeed(reader: t.store.reader,
                                  FetchDescriptor(entity: "Trip", where: "budget > 100.0", fields: ["budget"]))
        let (_, records) = try await feed.start()
        #expect(records.fields.map(\.name) == ["id", "budget"])
        try await t.insertTrips([trip("a", notes: "new notes")])
        #expect(try await feed.changes().isEmpty)
        try await t.insertTrips([trip("a", budget: 50), trip("b", budget: 1000)])
        let changes = try await feed.changes()
        #expect(changes.deleted.map(\.json) == [#""a""#])
        #expect(changes.updated.rows == [["b", 1000.0]])
    }

    @Test("commits that come between two reads are coalesced into one batch, each record once")
    func coalesced() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a")])
        let feed = try ResultFeed(reader: t.store.reader, FetchDescriptor(entity: "Trip", where: "destination == 'Rome'"))
        _ = try await feed.start()
        try await t.insertTrips([trip("a", budget: 1)])
        try await t.insertTrips([trip("a", budget: 2)])
        try await t.insertTrips([trip("x")])
        try await t.store.delete(entity: "Trip", where: "id == 'x'", author: "test")
        try await t.insertTrips([trip("y")])
        let changes = try await feed.changes()
        #expect(changes.updated.rows.count == 1 && changes.updated.value("budget", row: 0) == 2.0)
        // x came and went between the two reads: the client never had it.
        #expect(ids(changes.inserted) == ["y"])
        #expect(changes.deleted.isEmpty)
    }

    @Test("since resumes after a token: the changes after it, no result; an expired or unknown token is refused")
    func since() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a"), trip("b"), trip("c", destination: "Oslo")])
        let seen = try #require(try await t.store.reader.latestToken())
        try await t.insertTrips([trip("a", destination: "Oslo"), trip("b", budget: 1), trip("d"), trip("c")])
        let feed = try ResultFeed(reader: t.store.reader, FetchDescriptor(entity: "Trip", where: "destination == 'Rome'"))
        try await feed.resume(after: seen)
        var changes = try await feed.changes()
        #expect(ids(changes.inserted) == ["d"])
        // b changed; c entered by an update: the feed cannot know the client lacked it.
        #expect(ids(changes.updated) == ["b", "c"])
        #expect(changes.deleted.map(\.json) == [#""a""#])
        // From then on, it knows the result: a is not in it.
        try await t.store.delete(entity: "Trip", where: "id IN {'a', 'd'}", author: "test")
        changes = try await feed.changes()
        #expect(changes.deleted.map(\.json) == [#""d""#])

        try await t.store.pruneHistory(before: try #require(try await t.store.reader.latestToken()))
        let expired = await #expect(throws: DepotError.self) {
            try await ResultFeed(reader: t.store.reader, FetchDescriptor(entity: "Trip")).resume(after: seen)
        }
        #expect(expired?.code == .historyExpired)
        let unknown = await #expect(throws: DepotError.self) {
            try await ResultFeed(reader: t.store.reader, FetchDescriptor(entity: "Trip")).resume(after: HistoryToken("999")!)
        }
        #expect(unknown?.code == .invalidToken)
        // The feed that was following: its next read finds a transaction it
        // had not read pruned.
        try await t.insertTrips([trip("e")])
        try await t.insertTrips([trip("f")])
        try await t.store.pruneHistory(before: try #require(try await t.store.reader.latestToken()))
        await #expect(throws: DepotError.self) { try await feed.changes() }
    }

    @Test("limit, offset and section_by are refused")
    func refused() async throws {
        let t = try await TemporaryStore()
        for d in [FetchDescriptor(entity: "Trip", limit: 5), FetchDescriptor(entity: "Trip", offset: 1),
                  FetchDescriptor(entity: "Trip", sectionBy: "destination")] {
            let error = #expect(throws: DepotError.self) { try ResultFeed(reader: t.store.reader, d) }
            #expect(error?.code == .invalidArgument)
        }
    }
}

@Suite("Live fetch with changes: cost")
struct ResultFeedPlanTests {
    /// The cost of an event must follow the change, not the history: the
    /// changes after a token are found through the txn index.
    @Test("the changes after a token are searched through the history's index, never scanned")
    func plan() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let sql = ResultFeed.changesSQL.replacingOccurrences(of: "txn > ?", with: "txn > 5")
            .replacingOccurrences(of: "entity = ?", with: "entity = 'Trip'")
        let plan = try sqlite3(t.path, "EXPLAIN QUERY PLAN " + sql)
        #expect(plan.contains("USING INDEX depot_changes_txn"), "\(plan)")
        #expect(!plan.contains("SCAN") && !plan.contains("TEMP B-TREE"), "\(plan)")
    }
}
