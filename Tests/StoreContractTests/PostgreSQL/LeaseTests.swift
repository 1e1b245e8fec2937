import ChildProcessSupport
import DepotEngine
import DepotPostgres
import Foundation
import Testing

/// Jobs on a PostgreSQL store run by one host at a time under a lease: a
/// host killed with SIGKILL in the middle of an import loses its lease, and
/// another host resumes the job from its last checkpoint, exactly once.
@Suite("PostgreSQL: jobs under leases", .enabled(if: TestServer.available), .serialized)
struct LeaseTests {
    /// Rows of the leased import: DEPOT_LEASE_ROWS (1,000,000 for the
    /// issue's figure; the suite, in a debug build, uses 100,000).
    static let rows = ProcessInfo.processInfo.environment["DEPOT_LEASE_ROWS"].flatMap(Int.init) ?? 100_000

    static func writeFile(_ path: String, rows: Int) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let text = ImportContractTests.generated(rows)
        try handle.write(contentsOf: Data(text.utf8))
    }

    @Test("two hosts claim a job once; another claims it only once its lease has run out")
    func claims() async throws {
        let a = try await PostgresBackend(entities: [WriteContractTests.trip()])
        do {
            try await claimsOn(a.store)
        } catch {
            await a.close()
            throw error
        }
        await a.close()
    }

    func claimsOn(_ store: PostgresStore) async throws {
        try await store.putJob(id: "j1", state: "queued", record: Array("{}".utf8))
        try await store.putJob(id: "j2", state: "queued", record: Array("{}".utf8))
        // Two hosts at once: each gets one of the two jobs, never the same.
        async let first = store.claimJob(host: "A", lease: .seconds(60))
        async let second = store.claimJob(host: "B", lease: .seconds(60))
        let jobs = [try await first, try await second]
        let claimed = jobs.compactMap { $0?.id }
        #expect(Set(claimed) == ["j1", "j2"])
        // Both leases hold: a third host finds nothing to claim.
        #expect(try await store.claimJob(host: "C", lease: .seconds(60)) == nil)
        // B stops renewing: its lease runs out (here at once, a lease of
        // zero standing for the time passing); A renews its own.
        let (aJob, bJob) = (claimed[0], claimed[1])
        #expect(try await store.renewLease(job: bJob, host: "B", lease: .zero))
        #expect(try await store.renewLease(job: aJob, host: "A", lease: .seconds(60)))
        #expect(try await !store.renewLease(job: aJob, host: "B", lease: .seconds(60)))
        let taken = try await store.claimJob(host: "C", lease: .seconds(60))
        #expect(taken?.id == bJob)
        #expect(try await store.jobClaim(bJob)?.owner == "C")
        // B lost it: its renewal and its finish say so and change nothing.
        #expect(try await !store.renewLease(job: bJob, host: "B", lease: .seconds(5)))
        #expect(try await !store.finishJob(bJob, host: "B", record: "{}", state: "done"))
        #expect(try await store.finishJob(bJob, host: "C", record: "{\"ok\":1}", state: "done"))
        #expect(try await store.jobClaim(bJob)?.state == "done")
        #expect(try await store.jobClaim(aJob)?.owner == "A")
    }

    /// Issue 51: a host whose renewals could not reach the server in time
    /// lost its lease while it still ran the job; another host took the job
    /// over from its checkpoint, and both saved it.
    @Test(
        "a host whose lease lapsed and whose job another host took over: its save is refused and keeps nothing, its end is not written; the holder's are"
    )
    func fencedSaves() async throws {
        let a = try await PostgresBackend(entities: [WriteContractTests.trip()], host: "A")
        let b: PostgresBackend
        do {
            b = try await PostgresBackend(entities: [WriteContractTests.trip()], schema: a.schema, host: "B")
        } catch {
            await a.close()
            throw error
        }
        func save(_ host: PostgresBackend, job: String?, _ ids: [String]) async throws {
            let store = host.store
            _ = try await store.withSave(author: "import", job: job) { save in
                try await save.write(try store.prepare(SaveContractTests.rows(ids), BatchOptions(policy: .upsert)))
            }
        }
        do {
            try await a.store.putJob(id: "j", state: "queued", record: Array("{}".utf8))
            #expect(try await a.store.claimJob("j", host: "A", lease: .seconds(60))?.id == "j")
            try await save(a, job: "j", ["a1"])
            // A's lease lapses (a lease of zero standing for the time
            // passing) and B takes the job over.
            #expect(try await a.store.renewLease(job: "j", host: "A", lease: .zero))
            #expect(try await b.store.claimJob("j", host: "B", lease: .seconds(60))?.id == "j")
            await #expect(throws: DepotError.self) { try await save(a, job: "j", ["a2"]) }
            try await save(b, job: "j", ["b1"])
            #expect(try await a.records("Trip").map { $0[0].text } == ["a1", "b1"])
            #expect(try await a.history().count == 2)
            // A's end is not written; B's is, and stays.
            #expect(try await !a.store.putJob(id: "j", state: "failed", record: Array(#"{"a":1}"#.utf8)))
            #expect(try await b.store.putJob(id: "j", state: "succeeded", record: Array(#"{"b":1}"#.utf8)))
            #expect(try await !a.store.putJob(id: "j", state: "failed", record: Array(#"{"a":2}"#.utf8)))
            #expect(try await a.store.job("j") == Array(#"{"b":1}"#.utf8))
            // An ended job's saves are refused too; a save naming a job the
            // table does not know is not fenced.
            await #expect(throws: DepotError.self) { try await save(b, job: "j", ["b2"]) }
            try await save(a, job: "not-a-job", ["a3"])
            #expect(try await a.records("Trip").map { $0[0].text } == ["a1", "a3", "b1"])
        } catch {
            await a.close()
            await b.store.close()
            throw error
        }
        await a.close()
        await b.store.close()
    }

    @Test(
        "a host killed with SIGKILL in an import: another resumes it after the lease lapses; store, history and counters equal a clean run's"
    )
    func killedHostResumed() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("depot-lease-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let csv = folder.appendingPathComponent("trips.csv").path
        try Self.writeFile(csv, rows: Self.rows)
        let saveEvery = max(1_000, Self.rows / 10)
        func request(_ job: String, rejects: String) -> ImportRequest {
            var options = ImportOptions(format: .csv, saveEvery: saveEvery)
            options.saveInterval = .seconds(3600)
            options.maxRejects = .fraction(0.5)
            return ImportRequest(job: job, entity: "Trip", path: csv, rejectsPath: rejects, options: options)
        }
        // One clean run, in a schema of its own.
        let clean = try await PostgresBackend(entities: [WriteContractTests.trip()])
        let cleanRejects = folder.appendingPathComponent("clean.rejects").path
        let cleanResult = try await Importer.run(request("lease-job", rejects: cleanRejects), into: clean.store)
        let cleanRecords = try await clean.records("Trip")
        let cleanHistory = try await clean.history().map(\.changes)
        await clean.close()

        // Host A, a process of its own, claims the job and is killed after its third save.
        let b = try await PostgresBackend(entities: [WriteContractTests.trip()])
        do {
            let rejects = folder.appendingPathComponent("leased.rejects").path
            let spec = #"{"path":"\#(csv)","rejects":"\#(rejects)","saveEvery":\#(saveEvery)}"#
            try await b.store.putJob(id: "lease-job", state: "queued", record: Array(spec.utf8))
            let lease = 5_000
            // PGImportChild: a host in a process of its own (URL SCHEMA HOST LEASE_MS).
            let hostA = try ChildProcess("PGImportChild", arguments: [TestServer.url!, b.schema, "A", String(lease)])
            #expect(hostA.nextLine() == "claimed lease-job")
            while let line = hostA.nextLine() {
                if line == "save 3" { break }
                #expect(line.hasPrefix("save "), "host A: \(line)")
            }
            hostA.kill()
            // Host B: the lease is still A's, then it lapses and B claims the job.
            // B claims as the store's host: a job's saves commit only while it holds the job.
            let hostB = b.store.configuration.host
            #expect(try await b.store.claimJob(host: hostB, lease: .seconds(30)) == nil)
            #expect(try await b.store.jobClaim("lease-job")?.owner == "A")
            var claimed: ClaimedJob?
            let deadline = ContinuousClock.now + .seconds(30)
            while claimed == nil, ContinuousClock.now < deadline {
                claimed = try await b.store.claimJob(host: hostB, lease: .seconds(30))
                if claimed == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let job = try #require(claimed)
            #expect(job.id == "lease-job")
            let resumed = request(job.id, rejects: rejects)
            let result = try await b.store.withLease(on: job.id, host: hostB, lease: .seconds(30)) {
                [store = b.store] in
                try await Importer.run(resumed, into: store)
            }
            #expect(try await b.store.finishJob(job.id, host: hostB, record: job.record, state: "done"))
            // Exactly once: the same records, history and counters as the clean run.
            #expect(
                result.read == cleanResult.read && result.inserted == cleanResult.inserted
                    && result.updated == cleanResult.updated && result.unchanged == cleanResult.unchanged
                    && result.duplicates == cleanResult.duplicates && result.rejected == cleanResult.rejected
                    && result.saves == cleanResult.saves)
            #expect(try await b.records("Trip") == cleanRecords)
            let history = try await b.history().map(\.changes)
            #expect(history.count == cleanHistory.count)
            #expect(history == cleanHistory)
            #expect(
                try String(contentsOfFile: rejects, encoding: .utf8)
                    == String(contentsOfFile: cleanRejects, encoding: .utf8))
            let authors = Set(try await b.history().map(\.job))
            #expect(authors == ["lease-job"])
        } catch {
            await b.close()
            throw error
        }
        await b.close()
    }
}
