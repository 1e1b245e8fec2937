import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// A save whose connection is lost while its COMMIT is answered: the server
/// may have committed it or not, and the client cannot tell from the error.
/// The last CI run found a job called failed whose 100,000 rows the store
/// kept (a backend ended just after its COPY's commit). A save now asks the
/// server how its transaction ended, and says what the store holds.
@Suite("PostgreSQL: a save whose COMMIT's answer is lost", .enabled(if: TestServer.available), .serialized)
struct CommitOutcomeTests {
    /// Runs `body` on a store reached through a ``CommitCutProxy`` and on the
    /// same store reached directly (dropped at the end).
    static func throughProxy(
        _ body: (_ store: PostgresStore, _ direct: PostgresBackend, _ proxy: CommitCutProxy) async throws -> Void
    ) async throws {
        let direct = try await PostgresBackend(entities: [WriteContractTests.trip()])
        let base = direct.store.configuration.location
        let proxy = try CommitCutProxy(upstreamFolder: try #require(base.socketFolder), port: base.port)
        var location = base
        location.socketFolder = proxy.folder
        let store = try await PostgresStore.open(
            PostgresStoreConfiguration(name: "travel", location: location, entities: [WriteContractTests.trip()]))
        do {
            try await body(store, direct, proxy)
        } catch {
            await store.close()
            proxy.stop()
            await direct.close()
            throw error
        }
        await store.close()
        proxy.stop()
        await direct.close()
    }

    @Test(
        "the connection cut once the server has committed: the save succeeds, its history once, and the store goes on")
    func cutAfterTheCommit() async throws {
        try await Self.throughProxy { store, direct, proxy in
            proxy.arm(.afterTheServerAnswers)
            let outcome = try await SaveContractTests.twoWrites(
                store, SaveContractTests.rows(["a", "b"]), SaveContractTests.rows(["c"]))
            #expect(proxy.cuts == 1)
            #expect(outcome.value == [2, 20, 1])
            let history = try await direct.history()
            #expect(history.count == 1)
            #expect(outcome.token == history.first?.token)
            #expect(try await direct.records("Trip").map { $0[0].text } == ["a", "b", "c"])
            #expect(try await direct.checkpoint(job: "j") == [7])
            // The next save runs on another connection.
            _ = try await store.withSave(author: "test", job: nil) { save in
                try await save.write(try store.prepare(SaveContractTests.rows(["d"]), BatchOptions(policy: .upsert)))
            }
            #expect(try await direct.records("Trip").count == 4)
        }
    }

    @Test(
        "the COMMIT's answer lost, then the server unreachable for a while: the save still ends as the server kept it")
    func cutAfterTheCommitThenUnreachable() async throws {
        try await Self.throughProxy { store, direct, proxy in
            proxy.arm(.afterTheServerAnswers)
            // The connections that ask how the transaction ended are closed
            // at once, three times, as a restarting server's would be.
            proxy.refuse(3)
            let outcome = try await SaveContractTests.twoWrites(
                store, SaveContractTests.rows(["a", "b"]), SaveContractTests.rows(["c"]))
            #expect(proxy.cuts == 1 && proxy.refused == 3)
            #expect(outcome.value == [2, 20, 1])
            #expect(try await direct.records("Trip").count == 3)
            #expect(try await direct.history().count == 1)
        }
    }

    @Test("the connection cut before the server reads the COMMIT: the save fails, the store keeps nothing of it")
    func cutBeforeTheCommit() async throws {
        try await Self.throughProxy { store, direct, proxy in
            proxy.arm(.beforeTheServerReads)
            await #expect(throws: (any Error).self) {
                _ = try await SaveContractTests.twoWrites(
                    store, SaveContractTests.rows(["a", "b"]), SaveContractTests.rows(["c"]))
            }
            #expect(proxy.cuts == 1)
            #expect(try await direct.records("Trip").isEmpty)
            #expect(try await direct.history().isEmpty)
            #expect(try await direct.checkpoint(job: "j") == nil)
            _ = try await SaveContractTests.twoWrites(
                store, SaveContractTests.rows(["a", "b"]), SaveContractTests.rows(["c"]))
            #expect(try await direct.records("Trip").count == 3)
        }
    }

    @Test("an import whose one save's COMMIT answer is lost ends succeeded with every row, as the store holds them")
    func importCutAfterTheCommit() async throws {
        try await Self.throughProxy { store, direct, proxy in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cut-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent("trips.csv").path
            try Data(ImportContractTests.generated(2_000).utf8).write(to: URL(fileURLWithPath: path))
            var options = ImportOptions(saveEvery: 1_000_000, saveInterval: .seconds(3600))
            options.sortRun = 0
            let request = ImportRequest(
                job: "j", entity: "Trip", path: path, rejectsPath: folder.appendingPathComponent("r.ndjson").path,
                options: options)
            proxy.arm(.afterTheServerAnswers)
            let progress = try await Importer.run(request, into: store) { _ in }
            #expect(proxy.cuts == 1)
            #expect(progress.inserted > 0)
            #expect(try await direct.records("Trip").count == progress.inserted)
            #expect(try await direct.history().count == 1)
        }
    }
}
