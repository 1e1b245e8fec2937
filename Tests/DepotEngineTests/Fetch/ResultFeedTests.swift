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

    /// A feed of `descriptor` on `reader`: an SQLite store's own source,
    /// which shares the snapshots a commit wakes (``SQLiteFeedSource``), or
    /// the source written once over any store's snapshots, which a
    /// PostgreSQL store's feeds use (``SnapshotFeedSource``).
    static func feed(_ reader: StoreReader, _ descriptor: FetchDescriptor, snapshots: Bool) throws -> ResultFeed {
        snapshots ? try ResultFeed(reads: reader, descriptor) : try ResultFeed(reader: reader, descriptor)
    }

    @Test(
        "records enter and leave by updates of the predicate's field, by inserts and by deletes",
        arguments: [false, true])
    func enterAndLeave(snapshots: Bool) async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a"), trip("b"), trip("c", destination: "Oslo")])
        let feed = try Self.feed(
            t.store.reader, FetchDescriptor(entity: "Trip", where: "destination == 'Rome'"), snapshots: snapshots)
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

    static func number(_ token: HistoryToken?) -> Int64 { token.flatMap { Int64($0.description) } ?? 0 }

    /// Where each stream of ``manyStreams()`` got to; the writer waits for
    /// all of them before its next save.
    actor Progress {
        var seen: [Int: Int64] = [:]
        var waiter: (count: Int, token: Int64, continuation: CheckedContinuation<Void, Never>)?

        func report(_ stream: Int, _ token: Int64) {
            seen[stream] = max(seen[stream] ?? 0, token)
            check()
        }

        /// Returns when they all got there, or when the task is cancelled.
        func wait(streams: Int, reaching token: Int64) async {
            await withTaskCancellationHandler {
                await withCheckedContinuation {
                    waiter = (streams, token, $0); check()
                }
            } onCancel: {
                Task { await self.cancel() }
            }
        }

        private func cancel() {
            waiter?.continuation.resume()
            waiter = nil
        }

        private func check() {
            guard let w = waiter, seen.count == w.count, seen.values.allSatisfy({ $0 >= w.token }) else { return }
            waiter = nil
            w.continuation.resume()
        }
    }

    @Test(
        "40 followers and 40 feeds woken by the same commits (one shared snapshot each time) miss none and repeat none")
    func manyStreams() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("seed")])
        let reader = t.store.reader
        let after = try await reader.latestToken()
        let saves = 30
        var feeds: [ResultFeed] = []
        for _ in 0..<40 {
            let feed = try ResultFeed(reader: reader, FetchDescriptor(entity: "Trip", where: "destination == 'Rome'"))
            #expect(ids(try await feed.start().records) == ["seed"])
            feeds.append(feed)
        }
        let progress = Progress()
        enum Seen: Sendable { case followed([HistoryToken]), entered([String]), written([HistoryToken]) }
        // Every other save is to Rome, the last one too (a feed stops at its
        // last entry). Each save waits until every stream has seen the one before, so
        // that each commit is the last one for a while: a stream that read
        // an older snapshot than its wakeup would wait for ever, and the
        // time limit below ends the test with a failure.
        let seen = try await withThrowingTaskGroup(of: Seen.self) { group in
            for n in 0..<40 {
                group.addTask {
                    var tokens: [HistoryToken] = []
                    for try await transaction in reader.followHistory(after: after) {
                        tokens.append(transaction.token)
                        await progress.report(n, Self.number(transaction.token))
                        if tokens.count == saves { break }
                    }
                    return .followed(tokens)
                }
            }
            for (n, feed) in feeds.enumerated() {
                group.addTask {
                    var entered: [String] = []
                    var version = reader.commitCount
                    while true {
                        let changes = try await feed.changes()
                        entered += ids(changes.inserted)
                        await progress.report(40 + n, Self.number(changes.token))
                        if entered.count == saves / 2 { break }
                        guard await reader.waitForCommit(after: version) else { break }
                        version = reader.commitCount
                    }
                    return .entered(entered)
                }
            }
            group.addTask {
                var written: [HistoryToken] = []
                for i in 0..<saves {
                    let token = try await t.insertTrips([trip("w\(i)", destination: i % 2 == 1 ? "Rome" : "Oslo")])
                        .token!
                    written.append(token)
                    await progress.wait(streams: 80, reaching: Self.number(token))
                }
                return .written(written)
            }
            struct TimedOut: Error {}
            group.addTask {
                try await Task.sleep(for: .seconds(60))  // a time limit, not a wait for an event
                throw TimedOut()
            }
            var seen: [Seen] = []
            while seen.count < 81, let next = try await group.next() { seen.append(next) }
            group.cancelAll()
            return seen
        }
        let written =
            seen.compactMap { (s: Seen) -> [HistoryToken]? in if case .written(let w) = s { w } else { nil } }.first
            ?? []
        #expect(written.count == saves)
        let followed = seen.compactMap { (s: Seen) -> [HistoryToken]? in if case .followed(let f) = s { f } else { nil }
        }
        #expect(followed.count == 40 && followed.allSatisfy { $0 == written })
        let rome = (0..<saves).filter { $0 % 2 == 1 }.map { "w\($0)" }
        let entered = seen.compactMap { (s: Seen) -> [String]? in if case .entered(let e) = s { e } else { nil } }
        #expect(entered.count == 40 && entered.allSatisfy { $0 == rome })
    }

    @Test("fetched fields only: an update of another field is no event; records carry their identifier")
    func projection() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a"), trip("b")])
        let feed = try ResultFeed(
            reader: t.store.reader,
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
        let feed = try ResultFeed(
            reader: t.store.reader, FetchDescriptor(entity: "Trip", where: "destination == 'Rome'"))
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

    @Test(
        "since resumes after a token: the changes after it, no result; an expired or unknown token is refused",
        arguments: [false, true])
    func since(snapshots: Bool) async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([trip("a"), trip("b"), trip("c", destination: "Oslo")])
        let seen = try #require(try await t.store.reader.latestToken())
        try await t.insertTrips([trip("a", destination: "Oslo"), trip("b", budget: 1), trip("d"), trip("c")])
        let feed = try Self.feed(
            t.store.reader, FetchDescriptor(entity: "Trip", where: "destination == 'Rome'"), snapshots: snapshots)
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
            try await Self.feed(t.store.reader, FetchDescriptor(entity: "Trip"), snapshots: snapshots).resume(
                after: seen)
        }
        #expect(expired?.code == .historyExpired)
        let unknown = await #expect(throws: DepotError.self) {
            try await Self.feed(t.store.reader, FetchDescriptor(entity: "Trip"), snapshots: snapshots).resume(
                after: HistoryToken("999")!)
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
        for d in [
            FetchDescriptor(entity: "Trip", limit: 5), FetchDescriptor(entity: "Trip", offset: 1),
            FetchDescriptor(entity: "Trip", sectionBy: "destination")
        ] {
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
        let sql = SQLiteFeedSource.changesSQL.replacingOccurrences(of: "txn > ?", with: "txn > 5")
            .replacingOccurrences(of: "entity = ?", with: "entity = 'Trip'")
        let plan = try sqlite3(t.path, "EXPLAIN QUERY PLAN " + sql)
        #expect(plan.contains("USING INDEX depot_changes_txn"), "\(plan)")
        #expect(!plan.contains("SCAN") && !plan.contains("TEMP B-TREE"), "\(plan)")
    }
}
