import ChildProcessSupport
import DepotEngine
import DepotPostgres
import Foundation
import Testing

/// History consumers and pruning through the daemon's store contract on
/// both backends: one script of calls, each outcome written down (values,
/// or the error's code and message), checked by hand at the turns that
/// matter and then compared whole between SQLite and PostgreSQL.
@Suite("History contract: consumers and pruning on SQLite and PostgreSQL")
struct HistoryContractTests {
    static func describe(_ c: Consumer) -> String {
        "\(c.name)@\(c.token) lag \(c.lagTransactions) \(c.state.rawValue)"
    }

    static func describe(_ p: PruneOutcome) -> String {
        "deleted \(p.deleted) held by \(p.heldBackBy.map { "\($0.consumer)@\($0.token)" } ?? "none") lost \(p.lost)"
    }

    /// The script's outcomes on one backend.
    static func script(_ backend: any Backend) async throws -> [String] {
        let store = backend.contract
        var out: [String] = []
        func step(_ name: String, _ body: () async throws -> String) async {
            do {
                out.append("\(name): " + (try await body()))
            } catch let error as DepotError {
                out.append("\(name): \(error.code) \(error.message)")
            } catch {
                out.append("\(name): \(error)")
            }
        }
        func save(_ id: String) async throws {
            var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
            batch.append([.string(id), "Trip", "Oslo", "2025-01-01", nil, 1.0, true, nil])
            _ = try await backend.write(batch)
        }
        await step("create a") { describe(try await store.createConsumer("a", from: .beginning)) }
        await step("create a again") { describe(try await store.createConsumer("a", from: .now)) }
        await step("create a bad name") { describe(try await store.createConsumer("-x y", from: .now)) }
        for id in ["h1", "h2", "h3"] { try await save(id) }
        await step("read a") {
            try await store.reads.history(consumer: "a", entity: nil, author: nil, limit: 10)
                .map { "\($0.token):" + $0.changes.map(\.identifier).joined(separator: ",") }.joined(separator: " ")
        }
        await step("ack a 1") { describe(try await store.acknowledge(consumer: "a", token: HistoryToken(1))) }
        await step("ack a back to 0") { describe(try await store.acknowledge(consumer: "a", token: HistoryToken(0))) }
        await step("ack a 99") { describe(try await store.acknowledge(consumer: "a", token: HistoryToken(99))) }
        await step("consumers") { try await store.reads.consumers().map(describe).joined(separator: ", ") }
        await step("prune before 3") { describe(try await store.pruneHistory(before: HistoryToken(3))) }
        await step("prune before 99") { describe(try await store.pruneHistory(before: HistoryToken(99))) }
        await step("history") {
            try await store.reads.history(after: nil, entity: nil, author: nil, limit: 10).map { "\($0.token)" }
                .joined(separator: " ")
        }
        await step("history after 0") {
            "\(try await store.reads.history(after: HistoryToken(0), entity: nil, author: nil, limit: 10).count)"
        }
        await step("history after 1") {
            "\(try await store.reads.history(after: HistoryToken(1), entity: nil, author: nil, limit: 10).count)"
        }
        await step("history after 7") {
            "\(try await store.reads.history(after: HistoryToken(7), entity: nil, author: nil, limit: 10).count)"
        }
        await step("reset a now") { describe(try await store.resetConsumer("a", from: .now)) }
        await step("reset a after 0") { describe(try await store.resetConsumer("a", from: .after(HistoryToken(0)))) }
        await step("drop a") {
            try await store.dropConsumer("a"); return "dropped"
        }
        await step("drop a again") {
            try await store.dropConsumer("a"); return "dropped"
        }
        await step("read nobody") {
            "\(try await store.reads.history(consumer: "ab", entity: nil, author: nil, limit: 10).count)"
        }
        await step("prune all") { describe(try await store.pruneHistory(olderThan: .zero)) }
        await step("create b") { describe(try await store.createConsumer("b", from: .beginning)) }
        try await save("h4")
        await step("consumer b") { describe(try await store.reads.consumer("b")) }
        await step("read b") {
            try await store.reads.history(consumer: "b", entity: "Trip", author: nil, limit: 10)
                .map { "\($0.token):" + $0.changes.map(\.identifier).joined(separator: ",") }.joined(separator: " ")
        }
        return out
    }

    /// One save of new trips `ids` (or of their budget, for those stored).
    static func save(_ backend: any Backend, _ ids: [String], budget: Double = 1.0) async throws {
        var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
        for id in ids {
            batch.append([.string(id), "Trip", "Oslo", "2025-01-01", nil, .double(budget), true, nil])
        }
        _ = try await backend.write(batch)
    }

    /// Issue 35, item 8: one import's save is one transaction, so a page
    /// of ten transactions answered 170 MB; pages are cut by changes too.
    @Test(
        "pages of at most ten changes cut transactions, go on after a token inside one, and add up to the whole history"
    )
    func pagesByChanges() async throws {
        let answers = try await Backends.answers(entities: [TestEntities.trip(values: true)]) { backend in
            func save(_ ids: [String], budget: Double = 1.0) async throws {
                try await Self.save(backend, ids, budget: budget)
            }
            try await save((0..<3).map { "a\($0)" })
            try await save((0..<25).map { "b\($0)" })  // one run of new records on PostgreSQL
            try await save(["a0", "c0", "c1"], budget: 2.0)  // an update, two inserts
            let store = backend.contract
            var pages: [String] = []
            var after: HistoryToken?
            var read: [String] = []
            while pages.count < 10 {
                let page = try await store.reads.history(
                    after: after, entity: nil, author: nil, limit: 10, maxChanges: 10)
                guard let last = page.last else { break }
                pages.append(
                    page.map { "\($0.token)\($0.continues ? "+" : ""):\($0.changes.count)" }.joined(separator: " "))
                read += page.flatMap { $0.changes.map { "\($0.kind.rawValue) \($0.identifier)" } }
                after = last.token
            }
            let whole = try await store.reads.history(after: nil, entity: nil, author: nil, limit: 10)
                .flatMap { $0.changes.map { "\($0.kind.rawValue) \($0.identifier)" } }
            // By entity, from inside a transaction.
            let filtered = try await store.reads.history(
                after: HistoryToken("2.17"), entity: "Trip", author: nil,
                limit: 10, maxChanges: 9
            )
            .map { "\($0.token)\($0.continues ? "+" : ""):\($0.changes.first?.identifier ?? "")" }.joined(
                separator: " ")
            var refusals: [String] = []
            for body in [
                { _ = try await store.acknowledge(consumer: "x", token: HistoryToken("2.7")!) },
                { _ = try await store.pruneHistory(before: HistoryToken("2.7")!) }
            ] as [() async throws -> Void] {
                do { try await body(); refusals.append("accepted") } catch let e as DepotError {
                    refusals.append(e.code.description)
                }
            }
            return (pages.joined(separator: " | "), read == whole, whole.count, filtered, refusals)
        }
        for (name, answer) in answers {
            #expect(answer.0 == "1:3 2.7+:7 | 2.17+:10 | 2:8 3.2+:2 | 3:1", "\(name): \(answer)")
            #expect(answer.1, "\(name): the pages do not add up to the whole history")
            #expect(answer.2 == 31, "\(name)")
            #expect(answer.3 == #"2:"b17" 3.1+:"a0""#, "\(name): \(answer.3)")
            #expect(answer.4 == ["invalid_token", "invalid_token"], "\(name)")
        }
        for (name, answer) in answers.dropFirst() {
            #expect(answer.0 == answers[0].1.0 && answer.3 == answers[0].1.3, "\(name) differs from \(answers[0].0)")
        }
    }

    @Test(
        "a record's history comes old → new with its transactions, the newest `limit` of it, also from a run of new records; a follower cuts transactions by maxChanges"
    )
    func recordHistoryAndFollowerParts() async throws {
        let answers = try await Backends.answers(entities: [TestEntities.trip(values: true)]) { backend in
            func save(_ ids: [String], budget: Double = 1.0) async throws {
                try await Self.save(backend, ids, budget: budget)
            }
            try await save((0..<3).map { "a\($0)" })
            try await save((0..<25).map { "b\($0)" })  // one run of new records on PostgreSQL
            try await save(["a0", "b7"], budget: 2.0)
            try await save(["b7"], budget: 3.0)
            let reads = backend.contract.reads
            func describe(_ id: String, limit: Int = 100) async throws -> String {
                try await reads.recordHistory("Trip", identifier: [.string(id)], limit: limit).map { t in
                    "\(t.token):"
                        + t.changes.map { "\($0.kind.rawValue)\($0.new.map { " " + $0 } ?? "")" }
                        .joined(separator: ",")
                }.joined(separator: " | ")
            }
            var unknown = ""
            do { _ = try await reads.recordHistory("Nope", identifier: [.string("x")], limit: 1) } catch let e
                as DepotError
            {
                unknown = e.code.description
            }
            var parts: [String] = []
            for try await t in reads.followHistory(after: nil, entity: nil, author: nil, maxChanges: 10) {
                parts.append("\(t.token)\(t.continues ? "+" : ""):\(t.changes.count)")
                if t.token == HistoryToken(4) { break }
            }
            return [
                try await describe("b7"), try await describe("b7", limit: 1), try await describe("a1"),
                try await describe("zz"), unknown, parts.joined(separator: " ")
            ]
        }
        for (name, answer) in answers {
            #expect(
                answer[0].hasPrefix("2:insert") && answer[0].contains(" | 3:update {\"budget\":2"),
                "\(name): \(answer[0])")
            #expect(
                answer[0].hasSuffix(" | 4:update {\"budget\":3}")
                    || answer[0].hasSuffix(" | 4:update {\"budget\":3.0}"), "\(name): \(answer[0])")
            #expect(answer[1].hasPrefix("4:update"), "\(name): the newest one only: \(answer[1])")
            #expect(answer[2].hasPrefix("1:insert") && !answer[2].contains("|"), "\(name): \(answer[2])")
            #expect(answer[3] == "", "\(name): a record never written: \(answer[3])")
            #expect(answer[4] == "unknown_entity", "\(name): \(answer[4])")
            #expect(answer[5] == "1:3 2.7+:7 2.17+:10 2:8 3:2 4:1", "\(name): \(answer[5])")
        }
        for (name, answer) in answers.dropFirst() {
            #expect(answer == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }

    @Test("pages of history cut by maxChanges add up past transaction 9 to 10, and past 99 to 100 (numbers, not text)")
    func pagesPastPowersOfTen() async throws {
        let answers = try await Backends.answers(entities: [TestEntities.trip(values: true)]) { backend in
            // 105 saves of two changes: a new record, and a0, a1 or a2 new or changed.
            for i in 0..<105 {
                var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
                let budget = Double(i % 2 + 1)
                for id in ["a\(i % 3)", "b\(i)"] {
                    batch.append([.string(id), "Trip", "Oslo", "2025-01-01", nil, .double(budget), true, nil])
                }
                _ = try await backend.write(batch)
            }
            let store = backend.contract
            var read: [String] = []
            var after: HistoryToken?
            var pages = 0
            while pages < 500 {
                let page = try await store.reads.history(
                    after: after, entity: nil, author: nil, limit: 7, maxChanges: 5)
                guard let last = page.last else { break }
                pages += 1
                read += page.flatMap { t in t.changes.map { "\(t.token.id) \($0.kind.rawValue) \($0.identifier)" } }
                after = last.token
            }
            let whole = try await store.reads.history(after: nil, entity: nil, author: nil, limit: 1_000)
                .flatMap { t in t.changes.map { "\(t.token.id) \($0.kind.rawValue) \($0.identifier)" } }
            return (read, whole)
        }
        for (name, (read, whole)) in answers {
            #expect(whole.count == 105 * 2, "\(name): \(whole.count)")
            #expect(read == whole, "\(name): the pages do not add up to the whole history")
        }
        #expect(answers.map(\.1.1).allSatisfy { $0 == answers[0].1.1 }, "the backends' histories differ")
    }

    @Test(
        "a prune goes in saves of about historyPruneStep changes on both backends, a save's new records counted one by one"
    )
    func pruneInSteps() async throws {
        let answers = try await Backends.answers(entities: [TestEntities.trip(values: true)], pruneStep: 4) { backend in
            // 10 saves of 3 new records (one history row on PostgreSQL).
            for i in 0..<10 {
                var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
                for id in ["a\(i)", "b\(i)", "c\(i)"] {
                    batch.append([.string(id), "Trip", "Oslo", "2025-01-01", nil, 1.0, true, nil])
                }
                _ = try await backend.write(batch)
            }
            let pruned = try await backend.contract.pruneHistory(before: HistoryToken(10))
            let kept = try await backend.history().map {
                "\($0.token): " + $0.changes.map(\.identifier).joined(separator: " ")
            }
            return "deleted \(pruned.deleted) in \(pruned.saves) saves, kept \(kept)"
        }
        for (name, answer) in answers {
            // 3 changes a transaction, about 4 a save: 2 transactions a save.
            #expect(answer == #"deleted 9 in 5 saves, kept ["10: \"a9\" \"b9\" \"c9\""]"#, "\(name)")
        }
    }

    @Test("one script of consumer and prune calls answers alike, word for word")
    func script() async throws {
        let answers = try await Backends.answers(entities: [TestEntities.trip(values: true)], Self.script)
        for (name, out) in answers {
            let lines = Dictionary(
                out.map { ($0.components(separatedBy: ": ")[0], $0) }, uniquingKeysWith: { a, _ in a })
            #expect(lines["create a"] == "create a: a@0 lag 0 active", "\(name)")
            #expect(lines["create a again"]?.contains("conflict") == true, "\(name): \(out)")
            #expect(lines["read a"] == "read a: 1:\"h1\" 2:\"h2\" 3:\"h3\"", "\(name): \(out)")
            #expect(lines["ack a back to 0"] == "ack a back to 0: a@1 lag 2 active", "\(name): \(out)")
            #expect(lines["ack a 99"]?.contains("invalid_token") == true, "\(name): \(out)")
            #expect(lines["prune before 3"] == "prune before 3: deleted 1 held by a@1 lost []", "\(name): \(out)")
            #expect(lines["history"] == "history: 2 3", "\(name): \(out)")
            #expect(lines["history after 0"]?.contains("history_expired") == true, "\(name): \(out)")
            #expect(lines["history after 1"] == "history after 1: 2", "\(name): \(out)")
            #expect(lines["history after 7"]?.contains("invalid_token") == true, "\(name): \(out)")
            #expect(lines["reset a now"] == "reset a now: a@3 lag 0 active", "\(name): \(out)")
            #expect(lines["reset a after 0"]?.contains("history_expired") == true, "\(name): \(out)")
            #expect(lines["drop a again"]?.contains("unknown_consumer") == true, "\(name): \(out)")
            #expect(lines["prune all"] == "prune all: deleted 2 held by none lost []", "\(name): \(out)")
            #expect(lines["consumer b"] == "consumer b: b@3 lag 1 active", "\(name): \(out)")
            #expect(lines["read b"] == "read b: 4:\"h4\"", "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }
}
