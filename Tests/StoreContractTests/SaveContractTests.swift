import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// The store contract's save (``StoreBackend/withSave(author:job:_:)``), on
/// both backends: an async body whose writes commit together or not at all,
/// however it waits between them. On an SQLite store the body runs on the
/// write connection's thread (WriterPump); these cases hold it to the
/// contract where that could go wrong.
@Suite("Save contract: SQLite and PostgreSQL")
struct SaveContractTests {
    static func rows(_ ids: [String]) -> RecordBatch {
        WriteContractTests.batch(ids.map { WriteContractTests.row($0) })
    }

    /// Opens each backend with the Trip entity, runs `body` on its store, closes it.
    static func onEveryBackend(_ body: (any Backend) async throws -> Void) async throws {
        for name in Backends.names {
            let backend = try await Backends.open(name, entities: [WriteContractTests.trip()])
            do {
                try await body(backend)
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
    }

    /// Writes `first`, waits for a detached task (another thread), writes
    /// `second` and sets a checkpoint, in one save.
    static func twoWrites<Store: StoreBackend>(_ store: Store, _ first: RecordBatch, _ second: RecordBatch)
        async throws -> SaveOutcome<[Int]>
    {
        let (a, b) = (
            try store.prepare(first, BatchOptions(policy: .upsert)),
            try store.prepare(second, BatchOptions(policy: .upsert))
        )
        return try await store.withSave(author: "test", job: "j") { save in
            let one = try await save.write(a).inserted
            let waited = await Task.detached { one * 10 }.value
            let two = try await save.write(b).inserted
            try await save.setCheckpoint(job: "j", data: [7])
            return [one, waited, two]
        }
    }

    @Test("writes around a wait commit together with the checkpoint, as one history transaction")
    func writesAroundAWait() async throws {
        try await Self.onEveryBackend { (backend: any Backend) async throws in
            let outcome = try await Self.twoWrites(backend.contract, Self.rows(["T1", "T2"]), Self.rows(["T3"]))
            #expect(outcome.value == [2, 20, 1], "\(backend.name)")
            #expect(outcome.token != nil, "\(backend.name)")
            #expect(try await backend.records("Trip").count == 3, "\(backend.name)")
            let history = try await backend.history()
            #expect(history.count == 1, "\(backend.name)")
            #expect(history.first?.changes.count == 3, "\(backend.name)")
            #expect(try await backend.checkpoint(job: "j") == [7], "\(backend.name)")
        }
    }

    struct Refused: Error, Equatable {}

    static func failing<Store: StoreBackend>(_ store: Store, _ batch: RecordBatch) async throws {
        let prepared = try store.prepare(batch, BatchOptions(policy: .upsert))
        _ = try await store.withSave(author: "test", job: "j") { save -> Int in
            _ = try await save.write(prepared)
            try await save.setCheckpoint(job: "j", data: [1])
            await Task.yield()
            throw Refused()
        }
    }

    @Test("a body that throws after writing keeps nothing: no record, no history, no checkpoint; its error comes out")
    func bodyThrows() async throws {
        try await Self.onEveryBackend { (backend: any Backend) async throws in
            await #expect(throws: Refused.self, "\(backend.name)") {
                try await Self.failing(backend.contract, Self.rows(["T1"]))
            }
            #expect(try await backend.records("Trip").isEmpty, "\(backend.name)")
            #expect(try await backend.history().isEmpty, "\(backend.name)")
            #expect(try await backend.checkpoint(job: "j") == nil, "\(backend.name)")
            // The store goes on: the next save commits.
            #expect(try await backend.write(Self.rows(["T2"])).inserted == 1, "\(backend.name)")
        }
    }

    /// A save whose context escapes, used again after the save ended.
    final class Escaped<Context: WriteContext>: @unchecked Sendable {
        // Set once inside the save, read after it.
        var context: Context?
    }

    static func escaping<Store: StoreBackend>(_ store: Store, _ batch: RecordBatch) async throws -> (Int, String) {
        let escaped = Escaped<Store.Context>()
        let prepared = try store.prepare(batch, BatchOptions(policy: .upsert))
        _ = try await store.withSave(author: "test", job: nil) { save in escaped.context = save }
        do {
            _ = try await escaped.context!.write(prepared)
            return (1, "written")
        } catch let error as DepotError {
            return (0, "\(error.code)")
        }
    }

    @Test("a save's context used after the save ended writes nothing and says so (no crash, no hang)")
    func contextAfterTheSave() async throws {
        try await Self.onEveryBackend { (backend: any Backend) async throws in
            let (written, code) = try await Self.escaping(backend.contract, Self.rows(["T1"]))
            #expect(written == 0, "\(backend.name)")
            #expect(code == "database", "\(backend.name)")
            #expect(try await backend.records("Trip").isEmpty, "\(backend.name)")
        }
    }

    @Test("saves started together each commit, one after the other, each its own history transaction")
    func concurrentSaves() async throws {
        try await Self.onEveryBackend { (backend: any Backend) async throws in
            let contract = backend.contract
            let tokens = try await withThrowingTaskGroup(of: HistoryToken?.self) { group in
                for k in 0..<8 {
                    group.addTask {
                        try await Self.twoWrites(contract, Self.rows(["A\(k)"]), Self.rows(["B\(k)"])).token
                    }
                }
                var tokens: [HistoryToken] = []
                for try await token in group { tokens.append(try #require(token)) }
                return tokens
            }
            #expect(Set(tokens).count == 8, "\(backend.name)")
            #expect(try await backend.records("Trip").count == 16, "\(backend.name)")
            let history = try await backend.history()
            #expect(history.count == 8, "\(backend.name)")
            #expect(history.allSatisfy { $0.changes.count == 2 }, "\(backend.name)")
        }
    }

    @Test("a save whose task is cancelled before it begins: all or nothing, and the cause is the cancellation")
    func cancelledBeforeItBegins() async throws {
        try await Self.onEveryBackend { (backend: any Backend) async throws in
            let contract = backend.contract
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await Self.twoWrites(contract, Self.rows(["T1", "T2"]), Self.rows(["T3"]))
            }
            do {
                _ = try await task.value
                // A backend may finish a save it had begun: then wholly.
                #expect(try await backend.records("Trip").count == 3, "\(backend.name)")
            } catch {
                #expect(error is CancellationError, "\(backend.name): \(error)")
                #expect(try await backend.records("Trip").isEmpty, "\(backend.name)")
                #expect(try await backend.checkpoint(job: "j") == nil, "\(backend.name)")
            }
        }
    }

    static func closedSave<Store: StoreBackend>(_ store: Store) async throws -> String {
        try await store.close()
        do {
            _ = try await store.withSave(author: "test", job: nil) { _ in 1 }
            return "saved"
        } catch let error as DepotError {
            return "\(error.code)"
        }
    }

    @Test("a save on a closed store is refused as store_closed")
    func closedStore() async throws {
        try await Self.onEveryBackend { (backend: any Backend) async throws in
            let got = try await Self.closedSave(backend.contract)
            #expect(got == "store_closed", "\(backend.name): \(got)")
        }
    }
}
