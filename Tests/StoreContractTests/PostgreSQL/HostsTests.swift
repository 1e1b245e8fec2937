import DepotEngine
import DepotPostgres
import Foundation
import Testing

/// Several hosts on one PostgreSQL store (DESIGN §15): each host's store
/// hears the commits made through the others (LISTEN/NOTIFY), so that live
/// fetches and history follows see them without polling.
@Suite("PostgreSQL: several hosts on one store", .enabled(if: TestServer.available))
struct HostsTests {
    @Test("a commit through host A wakes a waiter on host B, and B reads it; latencies printed")
    func commitsHeardAcrossHosts() async throws {
        let a = try await PostgresBackend(entities: [WriteContractTests.trip()])
        let location = a.store.configuration.location
        let b = try await PostgresStore.open(
            PostgresStoreConfiguration(
                name: "travel", location: location,
                entities: [WriteContractTests.trip()]))
        do {
            var latencies: [Duration] = []
            var saves: [Duration] = []
            let clock = ContinuousClock()
            for i in 0..<20 {
                let seen = b.commitCount
                let waiter = Task { (await b.waitForCommit(after: seen), clock.now) }
                let started = clock.now
                let written = try await a.store.withSave(author: "host-a") {
                    try await $0.write(WriteContractTests.batch([WriteContractTests.row("T\(i)")]), policy: .upsert)
                }
                let committed = clock.now
                let (woke, at) = await waiter.value
                #expect(woke, "host B was not woken by host A's commit \(i)")
                // From A's commit acknowledged to B awake (B may wake first:
                // NOTIFY is delivered at the commit, before A hears back).
                latencies.append(at < committed ? .zero : at - committed)
                saves.append(committed - started)
                // What woke B is there to read: B's latest token is A's.
                #expect(try await b.reads.latestToken() == written.token)
            }
            #expect(try await b.records("Trip").count == 20)
            let history = try await b.history(limit: 100)
            #expect(history.count == 20 && history.allSatisfy { $0.author == "host-a" })
            let sorted = latencies.sorted()
            print(
                "host A's commit acknowledged to a waiter on host B awake, 20 commits: median \(sorted[10]), "
                    + "max \(sorted.last!); A's one-record saves: median \(saves.sorted()[10])")
            // Not a timing test: the figures go to BENCHMARKS.md. What is
            // checked is that each commit woke B (no notification lost).
        } catch {
            await b.close()
            await a.close()
            throw error
        }
        await b.close()
        await a.close()
    }

    @Test("an entity created over the API through host A is served by host B once A's commit is heard; a drop too")
    func entitiesHeardAcrossHosts() async throws {
        let a = try await PostgresBackend(entities: [WriteContractTests.trip()])
        let b = try await PostgresStore.open(
            PostgresStoreConfiguration(
                name: "travel", location: a.store.configuration.location, entities: [WriteContractTests.trip()]))
        do {
            let data = try EntityDefinition(
                json: Array(#"{"identifier": "code", "fields": {"code": "string", "n": "int?"}}"#.utf8), name: "Data"
            ).schema()
            // B hears A's notifications in their order: once it has heard
            // the token of the commit that follows the put, it has read the
            // entities again. (Waiting for any commit heard after the body
            // began was a race: a commit of A's before it, heard late, woke
            // the wait before the entities' notice was read.)
            var saves = 0
            func heardNext(_ body: () async throws -> Void) async throws {
                try await body()
                saves += 1
                let row = WriteContractTests.row("T\(saves)")
                let saved = try await a.store.withSave(author: "host-a") {
                    try await $0.write(WriteContractTests.batch([row]), policy: .upsert)
                }
                let token = try #require(saved.token)
                while true {
                    let seen = b.commitCount
                    if let heard = b.heardToken, heard >= token { break }
                    try #require(await b.waitForCommit(after: seen))
                }
            }
            try await heardNext {
                let created = try await a.store.putEntity(data)
                #expect(created)
            }
            #expect(b.reads.entitiesCreatedByAPI == ["Data"])
            var batch = RecordBatch(entity: "Data", columns: ["code", "n"])
            batch.append(["x", 1])
            let written = batch
            _ = try await b.withSave(author: "host-b") { try await $0.write(written, policy: .upsert) }
            #expect(try await a.store.reads.count(FetchDescriptor(entity: "Data")) == 1)
            _ = try await a.store.delete(entity: "Data", where: nil, author: "t")
            try await heardNext { try await a.store.dropEntity("Data") }
            #expect(b.reads.entities.map(\.name) == ["Trip"])
        } catch {
            await b.close()
            await a.close()
            throw error
        }
        await b.close()
        await a.close()
    }

    /// Issue #30: a local commit was counted when it returned and again
    /// when its own NOTIFY came back, so a live fetch woke twice for it.
    @Test("a commit made here counts once (its own announcement is not counted again); one of another host once too")
    func localCommitCountsOnce() async throws {
        let a = try await PostgresBackend(entities: [WriteContractTests.trip()])
        let b = try await PostgresStore.open(
            PostgresStoreConfiguration(
                name: "travel", location: a.store.configuration.location, entities: [WriteContractTests.trip()]))
        defer {
            Task {
                await b.close(); await a.close()
            }
        }
        let before = a.store.commitCount
        _ = try await a.write(WriteContractTests.batch([WriteContractTests.row("T1")]))
        // Another host's commit, announced after A's own on the same channel:
        // once A has heard it, A has heard its own announcement too.
        let other = try await b.withSave(author: "host-b") {
            try await $0.write(WriteContractTests.batch([WriteContractTests.row("T2")]), policy: .upsert)
        }
        let otherToken = try #require(other.token)
        var version = a.store.commitCount
        while a.store.heardToken.map({ $0 < otherToken }) ?? true {
            guard await a.store.waitForCommit(after: version) else {
                Issue.record("host B's commit never heard")
                return
            }
            version = a.store.commitCount
        }
        #expect(a.store.commitCount == before + 2)
    }

    @Test(
        "a save that changes nothing logs no history transaction (so announces nothing); closing the store ends its waiters"
    )
    func quietSaves() async throws {
        let a = try await PostgresBackend(entities: [WriteContractTests.trip()])
        _ = try await a.write(WriteContractTests.batch([WriteContractTests.row("T1")]))
        // The same record again: unchanged, no history transaction, no notification.
        let saved = try await a.store.withSave(author: "a") {
            try await $0.write(WriteContractTests.batch([WriteContractTests.row("T1")]), policy: .upsert)
        }
        #expect(saved.token == nil && saved.value.unchanged == 1)
        async let woke = a.store.waitForCommit(after: a.store.commitCount)
        await a.close()
        #expect(await woke == false)
    }

    /// Issue 31, item 7: the store's saves go one at a time across hosts,
    /// so a save on one host reads the other's token and merges with it
    /// exactly once.
    @Test("two hosts incrementing one record with if_token and retries lose no update and double none")
    func concurrentSaves() async throws {
        let a = try await PostgresBackend(entities: [WriteContractTests.trip()])
        let b = try await PostgresStore.open(
            PostgresStoreConfiguration(
                name: "travel", location: a.store.configuration.location, entities: [WriteContractTests.trip()]))
        do {
            _ = try await a.store.withSave(author: "setup") {
                try await $0.write(WriteContractTests.batch([WriteContractTests.row("T1", budget: 0)]), policy: .upsert)
            }
            let hosts: [any StoreBackend] = [a.store, b]
            let conflicts = try await withThrowingTaskGroup(of: Int.self) { group in
                for k in 0..<8 {
                    let host = hosts[k % 2]
                    group.addTask {
                        var retried = 0
                        for _ in 0..<40 {
                            while true {
                                let read = try #require(try await host.reads.record("Trip", identifier: ["T1"]))
                                guard case .double(let budget) = read.values[5] else { throw CancellationError() }
                                do {
                                    _ = try await host.save(
                                        ChangeSet([
                                            .init(
                                                .update, entity: "Trip", identifier: ["T1"],
                                                set: ["budget": .double(budget + 1)],
                                                ifToken: read.token)
                                        ]), author: "host \(k % 2)")
                                    break
                                } catch let refusal as SaveRefusal where refusal.failures.first?.code == .conflict {
                                    retried += 1
                                }
                            }
                        }
                        return retried
                    }
                }
                return try await group.reduce(0, +)
            }
            let final = try #require(try await b.reads.record("Trip", identifier: ["T1"]))
            #expect(final.values[5] == .double(320))
            // One history transaction per increment, on either host's reading.
            #expect(try await a.history().count == 321)
            print("two hosts, 320 increments of one record: \(conflicts) conflicts retried")
        } catch {
            await b.close()
            await a.close()
            throw error
        }
        await b.close()
        await a.close()
    }
}
