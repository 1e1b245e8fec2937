import DepotClient
import Foundation
import Testing

/// Processors through depotd and DepotClient (DESIGN §17): several clients
/// sharing one, each batch committed once with its changes.
@Suite("Processors through depotd and DepotClient")
struct ProcessorTests {
    @Test(
        "two clients share a processor: every batch committed once, every record changed once; a replay, an unknown name and a bad body refused"
    )
    func shared() async throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(2_000), name: "trips.csv")
        let start = try await DepotClient(socketPath: d.socket).store("travel").token
        let client = DepotClient(socketPath: d.socket)
        let created = try await client.createProcessor(
            store: "travel", ProcessorBody(name: "mark", entity: "Trip", where: "isFavorite == true", batch: 50))
        #expect(created.total == 1_000 && created.batches == 20 && created.state == "running" && created.lease == "30s")
        // A batch whose lease lapsed before its commit (a machine loaded
        // past 30 s) is refused, changes nothing and goes to the next
        // client, as a real client meets it: the counts below hold all the
        // same.
        let (counted, leases) = try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
            for worker in ["a", "b"] {
                group.addTask {
                    var n = 0
                    var leases: [String] = []
                    for try await batch in client.process(store: "travel", processor: "mark") {
                        let changes = batch.records.map {
                            SaveChange(
                                .update, entity: "Trip", identifier: $0["id"] ?? .null, set: ["notes": .string(worker)])
                        }
                        do {
                            try await batch.commit(changes)
                        } catch let error as DepotClientError where error.code == .conflict {
                            continue
                        }
                        leases.append(batch.lease)
                        n += batch.records.count
                    }
                    return (n, leases)
                }
            }
            var total = 0
            var all: [String] = []
            for try await (n, leases) in group {
                total += n
                all += leases
            }
            return (total, all)
        }
        #expect(counted == 1_000)
        let state = try #require(try await client.processors(store: "travel").first)
        #expect(state.done == 1_000 && state.batchesDone == 20 && state.state == "finished" && state.eta == nil)
        #expect(try await client.nextBatch(store: "travel", processor: "mark") == nil)
        // Each favourite marked once, by one worker; the others untouched.
        #expect(try await client.count(FetchRequest(store: "travel", entity: "Trip", where: "notes != nil")) == 1_000)
        #expect(
            try await client.count(
                FetchRequest(store: "travel", entity: "Trip", where: "notes != nil AND isFavorite == false")) == 0)
        let changes = try await client.history(store: "travel", after: start, limit: 1_000).flatMap(\.changes)
        #expect(changes.count == 1_000 && Set(changes.map(\.identifier)).count == 1_000)
        // A replayed commit changes nothing.
        do {
            try await client.commit(
                store: "travel", processor: "mark", lease: leases[0],
                changes: [SaveChange(.update, entity: "Trip", identifier: "t0", set: ["notes": "replayed"])])
            Issue.record("a replayed commit was accepted")
        } catch let error as DepotClientError {
            #expect(error.code == .conflict && error.status == 409, "\(error)")
        }
        #expect(
            try await client.count(FetchRequest(store: "travel", entity: "Trip", where: "notes == 'replayed'")) == 0)
        do {
            _ = try await client.nextBatch(store: "travel", processor: "nope")
            Issue.record("an unknown processor answered")
        } catch let error as DepotClientError {
            #expect(error.code == .unknownProcessor && error.status == 404, "\(error)")
        }
        let bad = try d.request("POST", "/v1/stores/travel/processors", body: #"{"name": "x y", "entity": "Trip"}"#)
        #expect(bad.status == 400 && bad.body.contains("a processor's name"), "\(bad.body)")
        let lease = try d.request(
            "POST", "/v1/stores/travel/processors", body: #"{"name": "x", "entity": "Trip", "lease": "0s"}"#)
        #expect(lease.status == 400, "\(lease.body)")
        let listed = try Ctl.run(["processors", "travel"], socket: d.socket)
        #expect(listed.status == 0)
        #expect(
            listed.lines.first?.split(separator: " ").map(String.init) == [
                "NAME", "ENTITY", "DONE", "TOTAL", "BATCHES", "LEASED", "RATE", "ETA", "STATE"
            ])
        #expect(
            listed.lines.dropFirst().first?.contains("1,000") == true && listed.out.contains("20/20"), "\(listed.out)")
        #expect(listed.out.contains("finished"))
        try await client.dropProcessor("mark", store: "travel")
        #expect(try await client.processors(store: "travel").isEmpty)
    }

    @Test(
        "clients that die mid-batch 20 times: their batches lapse and go to the others; every record committed exactly once (the log has each identifier once)"
    )
    func deadClients() async throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(1_000), name: "trips.csv")
        let client = DepotClient(socketPath: d.socket)
        let created = try await client.createProcessor(
            store: "travel", ProcessorBody(name: "p", entity: "Trip", batch: 10, lease: "1s"))
        #expect(created.total == 1_000 && created.batches == 100)
        // Twenty clients take a batch each and die before committing it.
        var abandoned: [String] = []
        for _ in 0..<20 {
            let batch = try #require(try await client.nextBatch(store: "travel", processor: "p"))
            abandoned += batch.records.compactMap { $0["id"]?.string }
        }
        // A live client goes through the rest; the dead ones' batches come
        // back to it once their leases lapse (next waits for that). A batch
        // of its own whose lease lapsed before its commit (a slow machine)
        // is refused, changes nothing, and comes back too: the log holds
        // what was committed.
        var log: [String] = []
        var refused = 0
        for try await batch in client.process(store: "travel", processor: "p") {
            do {
                try await batch.commit()
                log += batch.records.compactMap { $0["id"]?.string }
            } catch let error as DepotClientError where error.code == .conflict {
                refused += 1
            }
        }
        #expect(
            log.count == 1_000 && Set(log).count == 1_000,
            "\(log.count) committed, \(Set(log).count) distinct, \(refused) commits refused")
        #expect(Set(abandoned).isSubset(of: Set(log)) && abandoned.count == 200)
        let state = try #require(try await client.processors(store: "travel").first)
        #expect(state.done == 1_000 && state.state == "finished")
    }
}
