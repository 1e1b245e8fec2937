import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// Group commit (DESIGN §16, issue 31): saves share a commit, each under a
/// savepoint, with its own history transaction and token; a refused save
/// is undone alone. Both backends.
@Suite("Group commit contract: saves sharing a commit on SQLite and PostgreSQL")
struct GroupCommitContractTests {
    typealias Change = ChangeSet.Change

    static func script(_ backend: any Backend) async throws -> [String] {
        try await BatchContractTests.load(backend)
        let store = backend.contract
        let before = try await backend.history().count
        let commits = store.reads.commitCount
        let results = try await store.saveAll([
            SaveRequest(
                ChangeSet([Change(.insert, entity: "Customer", record: ["id": "c7", "name": "Gil"])]), author: "a"),
            SaveRequest(
                ChangeSet([Change(.insert, entity: "Customer", record: ["id": "c1", "name": "Dup"])]), author: "b"),
            SaveRequest(
                ChangeSet([Change(.update, entity: "Customer", identifier: ["c7"], set: ["name": "Gia"])]), author: "c"),
            SaveRequest(
                ChangeSet([Change(.update, entity: "Customer", identifier: ["c7"], set: ["name": "Gia"])]), author: "d"),
            SaveRequest(ChangeSet([]), author: "e"),
            SaveRequest(ChangeSet([Change(.delete, entity: "Customer", identifier: ["c2"])]), author: "f")
        ])
        var out = results.map { result -> String in
            switch result {
            case .success(let reply):
                return (reply.result?.changes.map(\.effect.rawValue).joined(separator: ",") ?? "")
                    + (reply.result?.token == nil ? " no token" : " token")
            case .failure(let error as SaveRefusal): return "refused \(error.failures.map(\.code.rawValue))"
            case .failure(let error as DepotError): return "\(error.code)"
            case .failure(let error): return "\(error)"
            }
        }
        let tokens = results.compactMap { try? $0.get().result?.token }
        out.append("tokens increase: \(tokens == tokens.sorted() && Set(tokens).count == tokens.count)")
        out.append("one commit: \(store.reads.commitCount - commits == 1)")
        let history = try await backend.history()
        out.append("transactions: \(history.count - before) by \(history.suffix(history.count - before).map(\.author))")
        out.append("their tokens: \(history.suffix(3).map(\.token) == tokens)")
        out.append("c7: \(try await store.reads.record("Customer", identifier: ["c7"])!.values)")
        out.append(
            "c7's token is c's: \(try await store.reads.record("Customer", identifier: ["c7"])!.token == tokens[1])")
        return out
    }

    @Test("saves in one commit keep their own transactions and tokens; a refused one is undone alone")
    func script() async throws {
        let answers = try await Backends.answers(entities: BatchContractTests.shop(), Self.script)
        for (name, out) in answers {
            #expect(
                out == [
                    "inserted token", #"refused ["already_exists"]"#, "updated token", "unchanged no token",
                    "invalid_argument", "deleted token", "tokens increase: true", "one commit: true",
                    #"transactions: 3 by ["a", "c", "f"]"#, "their tokens: true", #"c7: ["c7", "Gia"]"#,
                    "c7's token is c's: true"
                ], "\(name): \(out)")
        }
    }

    @Test("concurrent saves through a queue share commits, each answered its own token")
    func queue() async throws {
        let answers = try await Backends.answers(entities: BatchContractTests.shop()) { backend -> [String] in
            let store = backend.contract
            let queue = SaveQueue(store)
            // The writer held by a save that waits, so that the saves queue up behind it.
            let writer = await HeldWriter.hold(store)
            let first = Task {
                try await queue.save(
                    SaveRequest(
                        ChangeSet([Change(.insert, entity: "Note", record: ["id": 100, "text": "n"])]), author: "q"))
            }
            // The first leads, its group taken, waiting for the writer.
            while queue.load != (0, true) { await Task.yield() }
            let commits = store.reads.commitCount
            let saves = (1...40).map { k in
                Task {
                    try await queue.save(
                        SaveRequest(
                            ChangeSet([
                                Change(.insert, entity: "Note", record: ["id": .int(Int64(100 + k)), "text": "n"])
                            ]),
                            author: "q"))
                }
            }
            while queue.load.waiting < 40 { await Task.yield() }  // all queued behind the first
            try await writer.release()
            var tokens = [try await first.value.result!.token!]
            for s in saves { tokens.append(try await s.value.result!.token!) }
            return [
                "tokens: \(Set(tokens).count) distinct",
                "commits: \(store.reads.commitCount - commits <= 2)",
                "notes: \(try await backend.records("Note").count)"
            ]
        }
        for (name, out) in answers {
            #expect(out == ["tokens: 41 distinct", "commits: true", "notes: 41"], "\(name): \(out)")
        }
    }
}

/// A save that holds a store's writer until it is released, so that saves
/// queue up behind it.
struct HeldWriter {
    let open: AsyncStream<Void>.Continuation
    let holder: Task<Void, any Error>

    /// Returns once the writer is held.
    static func hold(_ store: any StoreBackend) async -> HeldWriter {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let (held, holding) = AsyncStream<Void>.makeStream()
        let holder = Task {
            _ = try await store.withSave(author: "holder", job: nil) { _ in
                holding.yield()
                for await _ in gate { break }
            }
        }
        for await _ in held { break }
        return HeldWriter(open: open, holder: holder)
    }

    /// Lets the writer go; returns once the holding save has ended.
    func release() async throws {
        open.yield()
        try await holder.value
    }
}
