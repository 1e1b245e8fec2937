import ChildProcessSupport
import DepotClient
import Foundation
import Testing

/// The Swift client library (issue 14, DESIGN §13) against a real depotd on
/// a temporary socket: every call, and the errors, typed.
@Suite("DepotClient against a real depotd", .serialized)
struct DepotClientTests {
    /// A daemon holding 30 trips (tripsCSV: City 0…8, budgets i.5).
    static func daemon(saveEvery: Int = 200_000) throws -> DaemonProcess {
        let d = try DaemonProcess(config: DaemonProcess.config(saveEvery: saveEvery))
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(30), name: "trips.csv")
        return d
    }

    struct Trip: Decodable, Equatable {
        var id: String
        var name: String
        var destination: String?
        var budget: Double
        var isFavorite: Bool
    }

    @Test("stores and entities, with their fields and counts")
    func stores() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let stores = try await client.stores()
        #expect(stores.map(\.name) == ["travel"])
        let travel = try await client.store("travel")
        #expect(travel == stores[0])
        let trip = try #require(travel.entity("Trip"))
        #expect(trip.count == 30 && trip.identifier == ["id"] && trip.indexes == [["destination"]])
        #expect(trip.fields.first { $0.name == "destination" }?.type == "string?")
        #expect(travel.token != nil)
        #expect(travel.entity("Nope") == nil)
    }

    @Test("fetch as records and as a Decodable type, count, identifiers, with predicates, sort, pages and fields")
    func fetching() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let request = FetchRequest(
            store: "travel", entity: "Trip", where: "destination == $city AND budget > $min",
            arguments: ["city": "City 1", "min": 5], sort: ["-budget"])
        let records = try await client.fetch(request)
        // City 1: t1, t10, t19, t28; budget > 5 leaves t10, t19, t28.
        #expect(records.map { $0["id"]?.string } == ["t28", "t19", "t10"])
        #expect(records[0]["budget"]?.double == 28.5 && records[0]["isFavorite"]?.bool == true)
        let trips = try await client.fetch(request, as: Trip.self)
        #expect(trips.first == Trip(id: "t28", name: "Trip 28", destination: "City 1", budget: 28.5, isFavorite: true))
        #expect(try records[1].decode(as: Trip.self) == trips[1])
        #expect(try await client.count(request) == 3)
        #expect(try await client.identifiers(request) == ["t28", "t19", "t10"])
        var page = FetchRequest(
            store: "travel", entity: "Trip", sort: ["id"], limit: 2, offset: 1, fields: ["id", "budget"])
        let two = try await client.fetch(page)
        #expect(two.map(\.fields) == [["id": "t1", "budget": 1.5], ["id": "t10", "budget": 10.5]])
        page.limit = nil
        #expect(try await client.count(page) == 29)
        #expect(try await client.count(FetchRequest(store: "travel", entity: "Trip")) == 30)
        // Keyset pages (issue 52 item 4): by destination (9 cities, ties by id), 4 at a time.
        var keyset = FetchRequest(store: "travel", entity: "Trip", sort: ["destination"], limit: 4)
        let whole = try await client.identifiers(FetchRequest(store: "travel", entity: "Trip", sort: ["destination"]))
        var paged: [String] = []
        while paged.count <= whole.count {
            let records = try await client.fetch(keyset)
            paged += records.compactMap { $0["id"]?.string }
            guard records.count == 4, let last = records.last else { break }
            keyset.after = [last["destination"] ?? .null, last["id"] ?? .null]
        }
        #expect(paged == whole.compactMap(\.string) && whole.count == 30, "\(paged)")
        var chosen = FetchRequest(store: "travel", entity: "Trip", sort: ["-id"])
        chosen.identifiers = ["t3", "t12", "t99"]
        #expect(try await client.identifiers(chosen).compactMap(\.string) == ["t3", "t12"])
    }

    @Test("aggregates by group, and duplicates")
    func aggregatesAndDuplicates() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let rows = try await client.aggregate(
            store: "travel", entity: "Trip", field: "budget", functions: [.count, .max],
            groupBy: ["destination"], where: "budget < $b", arguments: ["b": 20])
        #expect(rows.count == 9)
        #expect(rows[0].group == ["destination": "City 0"])
        #expect(rows[0][.count] == 3 && rows[0][.max] == 18.5 && rows[0][.avg] == nil)
        let all = try await client.aggregate(store: "travel", entity: "Trip")
        #expect(all.count == 1 && all[0].group.isEmpty && all[0][.count] == 30)
        let groups = try await client.duplicates(store: "travel", entity: "Trip", by: ["destination"], limit: 2)
        #expect(groups.map(\.values) == [["City 0"], ["City 1"]])
        #expect(Set(groups[0].identifiers) == ["t0", "t9", "t18", "t27"])
        #expect(try await client.duplicates(store: "travel", entity: "Trip", by: ["name"]).isEmpty)
    }

    @Test("every error is a DepotClientError with the daemon's code, status and message")
    func errors() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        func failure(_ body: () async throws -> Void) async -> DepotClientError? {
            do {
                try await body()
                return nil
            } catch let error as DepotClientError {
                return error
            } catch {
                Issue.record("not a DepotClientError: \(error)")
                return nil
            }
        }
        let store = await failure { _ = try await client.store("tarvel") }
        #expect(store?.code == .unknownStore && store?.status == 404 && store?.message.contains("travel") == true)
        let entity = await failure { _ = try await client.count(FetchRequest(store: "travel", entity: "Trips")) }
        #expect(entity?.code == .unknownEntity && entity?.status == 404)
        let predicate = await failure {
            _ = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", where: "budget >"))
        }
        #expect(predicate?.code == .invalidPredicate && predicate?.status == 400 && predicate?.position == 9)
        let field = await failure {
            _ = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", sort: ["cost"]))
        }
        #expect(field?.code == .unknownField)
        let type = await failure {
            _ = try await client.count(FetchRequest(store: "travel", entity: "Trip", where: "budget > 'high'"))
        }
        #expect(type?.code == .typeMismatch)
        let duplicates = await failure { _ = try await client.duplicates(store: "travel", entity: "Trip", by: []) }
        #expect(duplicates?.code == .invalidArgument)
        struct Wrong: Decodable { var id: Int }
        let decoding = await failure {
            _ = try await client.fetch(FetchRequest(store: "travel", entity: "Trip"), as: Wrong.self)
        }
        #expect(decoding?.code == .unexpectedAnswer && decoding?.status == nil)
        let nobody = await failure { _ = try await DepotClient(socketPath: d.folder.path + "/none.sock").stores() }
        #expect(nobody?.code == .unreachable && nobody?.message.contains("no daemon at") == true)
        let missing = await failure {
            _ = try await client.upload(file: d.folder.path + "/none.csv", store: "travel", entity: "Trip")
        }
        #expect(missing?.code == .localIO && missing?.message.contains("none.csv") == true)
        #expect(missing?.isTransient == false && nobody?.isTransient == true)
        // A large upload the daemon refuses on its head (an unknown entity)
        // and closes: the refusal comes back, not a write error or a wait.
        let big = d.folder.appendingPathComponent("big.csv")
        try Data(tripsCSV(100_000, prefix: "u").utf8).write(to: big)
        for _ in 0..<20 {
            let refused = await failure {
                _ = try await client.upload(file: big.path, store: "travel", entity: "Trips")
            }
            #expect(refused?.code == .unknownEntity && refused?.status == 404)
        }

        // A daemon killed in the middle of an answer: the answer broke off, it is not a short one.
        let follow = client.followHistory(store: "travel")
        var transactions = follow.makeAsyncIterator()
        #expect(try await transactions.next() != nil)
        kill(d.process.processIdentifier, SIGKILL)
        let broken = await failure { while try await transactions.next() != nil {} }
        #expect(broken?.code == .brokenAnswer && broken?.isTransient == true)
    }

    /// The job's last state, following its progress.
    static func finish(_ client: DepotClient, _ job: Job) async throws -> Job {
        var last = job
        for try await state in client.progress(of: job.id) { last = state }
        #expect(last.state.isFinal)
        return last
    }

    @Test("jobs: imports of a path, of bytes and of an uploaded file, updates, deletes, progress to the end, cancel")
    func jobs() async throws {
        let d = try Self.daemon(saveEvery: 1_000)
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        // By path, under import_roots.
        let file = d.folder.appendingPathComponent("inbox/more.csv")
        try Data(tripsCSV(5, prefix: "m").utf8).write(to: file)
        let byPath = try await Self.finish(
            client, try await client.importFile(file.path, store: "travel", entity: "Trip"))
        #expect(
            byPath.state == .succeeded && byPath.inserted == 5 && byPath.kind == "import" && byPath.entity == "Trip")
        // Bytes, with options: one bad row and no rejects allowed fails the job, naming the reason.
        let bad = Array("id,name,startDate,budget,isFavorite\nb1,B,2025-01-01,cheap,true\n".utf8)
        let failed = try await Self.finish(
            client,
            try await client.importData(
                bad, store: "travel", entity: "Trip", options: ImportOptions(format: .csv, maxRejects: "0")))
        #expect(failed.state == .failed && failed.error?.contains("more than max_rejects (0)") == true, "\(failed)")
        #expect(failed.read == 1 && failed.rejected == 1)
        // An NDJSON file uploaded, the format told by its extension.
        let ndjson = d.folder.appendingPathComponent("up.ndjson")
        try Data(#"{"id":"u1","name":"U","startDate":"2025-02-02","budget":2,"isFavorite":false}"#.utf8).write(
            to: ndjson)
        let uploaded = try await Self.finish(
            client, try await client.upload(file: ndjson.path, store: "travel", entity: "Trip"))
        #expect(uploaded.state == .succeeded && uploaded.inserted == 1)
        #expect(try await client.count(FetchRequest(store: "travel", entity: "Trip")) == 36)
        // Batch update and delete.
        let updated = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "destination == 'City 0'", set: ["isFavorite": false]))
        #expect(updated.state == .succeeded && updated.read == 5 && updated.updated + updated.unchanged == 5)
        let deleted = try await Self.finish(
            client, try await client.delete(store: "travel", entity: "Trip", where: "id BEGINSWITH 'm'"))
        #expect(deleted.deleted == 5)
        // The records: the ones listed, each one by id.
        let all = try await client.jobs()
        #expect(all.map(\.id).suffix(5) == [byPath.id, failed.id, uploaded.id, updated.id, deleted.id])
        #expect(try await client.job(updated.id) == updated)
        // A computed update: budgets doubled, but a nil budget (it is required) rejects its record.
        let city = FetchRequest(store: "travel", entity: "Trip", where: "destination == 'City 1'", sort: ["id"])
        func budgets() async throws -> [(String, Double)] {
            try await client.fetch(city).map { ($0.fields["id"]?.string ?? "", $0.fields["budget"]?.double ?? .nan) }
        }
        let before = try await budgets()
        let computed = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "destination == 'City 1'",
                compute: ["budget": "TERNARY(budget < 10, nil, budget * 2)"]))
        #expect(computed.state == .succeeded && computed.read == before.count, "\(computed)")
        let small = before.filter { $0.1 < 10 }
        #expect(computed.rejected == small.count && computed.updated == before.count - small.count && !small.isEmpty)
        var rejectLines: [String] = []
        try await client.rejectLines(ofJob: computed.id) { line in
            rejectLines.append(line)
            return true
        }
        #expect(rejectLines.count == small.count && rejectLines.allSatisfy { $0.contains(#""field":"budget""#) })
        let after = try await budgets()
        let expected: [String] = before.map { (id: String, b: Double) -> String in "\(id) \(b < 10 ? b : b * 2)" }
        #expect(after.map { "\($0.0) \($0.1)" } == expected)
        // Cancelling an unknown job says so; a finished one stays as it ended.
        do {
            _ = try await client.cancel("jnone")
            Issue.record("cancelled an unknown job")
        } catch let e as DepotClientError {
            #expect(e.code == .unknownJob && e.status == 404)
        }
        #expect(try await client.cancel(deleted.id).state == .succeeded)
        // A running import, cancelled, stops at its next save; what it saved stays.
        let long = try await client.importData(
            Array(tripsCSV(200_000, prefix: "c").utf8), store: "travel", entity: "Trip",
            options: ImportOptions(format: .csv))
        var last = long
        for try await state in client.progress(of: long.id) {
            last = state
            if state.state == .running && state.saves > 0 { _ = try await client.cancel(long.id) }
        }
        #expect(last.state == .cancelled && last.inserted > 0 && last.inserted < 200_000, "\(last)")
        #expect(last.saves > 0 && last.read == last.inserted)
        #expect(
            try await client.count(FetchRequest(store: "travel", entity: "Trip", where: "id BEGINSWITH 'c'"))
                == last.inserted)
    }

    @Test(
        "history: pages, follow (cancelling it ends its connection), prune; consumers read after their token and acknowledge"
    )
    func historyAndConsumers() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let first = try await client.history(store: "travel")
        #expect(first.count == 1 && first[0].changes.count == 30 && first[0].changes[0].kind == .insert)
        #expect(first[0].changes[0].entity == "Trip" && first[0].job != nil)
        let consumer = try await client.createConsumer("indexer", store: "travel", from: .beginning)
        #expect(consumer.lagTransactions == 1 && consumer.state == "active")

        // Follow: the transaction there is, then the next one as it commits.
        let received = AsyncStream<HistoryTransaction>.makeStream()
        let follower = Task {
            for try await t in client.followHistory(store: "travel") { received.continuation.yield(t) }
        }
        var seen = received.stream.makeAsyncIterator()
        #expect(await seen.next()?.token == first[0].token)
        try d.waitForStreams(1)
        _ = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "id == 't3'",
                set: ["budget": 99.0]))
        let next = await seen.next()
        #expect(next?.changes.map(\.kind) == [.update] && next?.changes[0].fields == ["budget"])
        #expect(next?.changes[0].identifier == "t3")
        follower.cancel()
        try d.waitForStreams(0)

        // The consumer reads both after its token, acknowledges, and is caught up.
        let page = try await client.history(store: "travel", consumer: "indexer")
        #expect(page.map(\.token) == [first[0].token, next?.token ?? ""])
        let acknowledged = try await client.acknowledge("indexer", store: "travel", token: page[1].token)
        #expect(acknowledged.token == page[1].token && acknowledged.lagTransactions == 0)
        #expect(try await client.consumers(store: "travel").map(\.name) == ["indexer"])
        #expect(try await client.history(store: "travel", consumer: "indexer").isEmpty)
        #expect(try await client.resetConsumer("indexer", store: "travel", from: .beginning).lagTransactions == 2)
        try await client.dropConsumer("indexer", store: "travel")
        #expect(try await client.consumers(store: "travel").isEmpty)
        // Pruning before the second transaction leaves it alone; reading after the first is then expired.
        #expect(try await client.pruneHistory(store: "travel", before: page[1].token) == 1)
        do {
            _ = try await client.history(store: "travel", after: "0")
            Issue.record("read a pruned history")
        } catch let e as DepotClientError {
            #expect(e.code == .historyExpired && e.status == 410)
        }
    }

    @Test(
        "a live query keeps its result through a daemon restart: no change missed or doubled, no refetch; cancelling it ends its connection",
        .timeLimit(.minutes(2)))
    func liveQuery() async throws {
        let first = try Self.daemon()
        let folder = first.folder
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = first
        let client = DepotClient(socketPath: d.socket)
        // City 1: t1, t10, t19, t28.
        let request = FetchRequest(store: "travel", entity: "Trip", where: "destination == 'City 1'")
        let states = AsyncStream<LiveState>.makeStream()
        let watcher = Task {
            for try await state in client.live(request) { states.continuation.yield(state) }
        }
        var next = states.stream.makeAsyncIterator()
        var result: [JSONValue: Record] = [:]
        var results = 0
        var seen: [String] = []  // "update t1", "delete t19", … in the order they came
        var failures = 0
        /// Folds states into `result` until `done` holds.
        func fold(until done: () -> Bool) async {
            while !done(), let state = await next.next() {
                switch state {
                case .loading: break
                case .result(let records, _):
                    results += 1
                    result = Dictionary(uniqueKeysWithValues: records.map { ($0["id"]!, $0) })
                case .changes(let c):
                    for r in c.inserted { result[r["id"]!] = r; seen.append("insert \(r["id"]!.string!)") }
                    for r in c.updated { result[r["id"]!] = r; seen.append("update \(r["id"]!.string!)") }
                    for id in c.deleted { result[id] = nil; seen.append("delete \(id.string!)") }
                case .failure(let e):
                    #expect(e.isTransient, "\(e)")
                    failures += 1
                }
            }
        }
        await fold { results == 1 }
        #expect(Set(result.keys) == ["t1", "t10", "t19", "t28"])
        _ = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "id == 't1'",
                set: ["budget": 1000.0]))
        await fold { result["t1"]?["budget"] == 1000.0 }

        // The daemon stops: the live query says so, and tries again.
        #expect(d.stop() == 0)
        await fold { failures > 0 }
        // Back: the query says it is current again (an empty change) before
        // anything changes, then resumes from its token.
        d = try DaemonProcess(folder: folder)
        defer { d.stop() }
        var recovered = false
        while !recovered, let state = await next.next() {
            if case .changes(let c) = state {
                #expect(c.inserted.isEmpty && c.updated.isEmpty && c.deleted.isEmpty)
                recovered = true
            }
        }
        #expect(recovered)
        _ = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "id == 't10'",
                set: ["budget": 111.0]))
        _ = try await Self.finish(
            client, try await client.delete(store: "travel", entity: "Trip", where: "id == 't19'"))
        _ = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "id == 't2'",
                set: ["destination": "City 1"]))
        await fold { result["t10"]?["budget"] == 111.0 && result["t19"] == nil && result["t2"] != nil }
        #expect(Set(result.keys) == ["t1", "t2", "t10", "t28"])
        #expect(results == 1, "a resumed query does not fetch its result again")
        // Each change once: t2, which entered the result while the query was
        // away, comes as updated (a resumed feed cannot know the client lacked it).
        #expect(seen.filter { $0.hasSuffix(" t2") }.count == 1 && seen.contains { $0.hasSuffix(" t2") })
        #expect(seen.filter { !$0.hasSuffix(" t2") }.sorted() == ["delete t19", "update t1", "update t10"])
        let fetched = try await client.fetch(request)
        #expect(Set(fetched) == Set(result.values))

        // Cancelling the loop's task ends its connection to the daemon.
        try d.waitForStreams(1)
        watcher.cancel()
        try d.waitForStreams(0)
    }

    @Test(
        "a live query resumed from a token gets what changed since; from a pruned token it fetches the result again",
        .timeLimit(.minutes(1)))
    func liveQueryResumed() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let request = FetchRequest(store: "travel", entity: "Trip", where: "destination == 'City 1'")
        let token = try #require(try await client.store("travel").token)
        _ = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "id == 't1'",
                set: ["budget": 5.0]))
        // Resumed: the change after the token, no result first.
        var resumed = client.live(request, since: token).makeAsyncIterator()
        guard case .changes(let c)? = try await resumed.next() else {
            Issue.record("a resumed live query did not start with the changes")
            return
        }
        #expect(c.updated.map { $0["id"] } == ["t1"] && c.inserted.isEmpty && c.deleted.isEmpty)
        #expect(c.token != nil && c.token != token)
        // Once a change after the token is pruned away: loading, then the whole result again.
        _ = try await Self.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "id == 't10'",
                set: ["budget": 6.0]))
        let latest = try #require(try await client.store("travel").token)
        try await client.pruneHistory(store: "travel", before: latest)
        var expired = client.live(request, since: token).makeAsyncIterator()
        #expect(try await expired.next() == .loading)
        guard case .result(let records, let current)? = try await expired.next() else {
            Issue.record("an expired live query did not fetch its result again")
            return
        }
        #expect(Set(records.compactMap { $0["id"]?.string }) == ["t1", "t10", "t19", "t28"] && current == latest)
    }

    @Test("the socket comes from the argument, else DEPOT_SOCKET, else the default")
    func socketPath() {
        #expect(DepotClient(socketPath: "/tmp/x.sock").socketPath == "/tmp/x.sock")
        let environment = ProcessInfo.processInfo.environment["DEPOT_SOCKET"]
        #expect(DepotClient().socketPath == (environment.flatMap { $0.isEmpty ? nil : $0 } ?? "/run/depot/depot.sock"))
    }
}

/// The example program of docs/swift-client.md, built with the package,
/// run against a real depotd; and the document shows it as it is.
@Suite("docs/swift-client.md's program", .serialized)
struct ClientExampleTests {
    static var executable: URL {
        DaemonProcess.products.appendingPathComponent("depot-client-example")
    }

    /// Runs the example with `arguments`; its output lines, as they come, to `onLine`.
    /// Runs the program with `arguments` to its end, on a thread of its own:
    /// the wait for its output must not hold one of the few threads every
    /// task of the test process shares (two, on two cores), which the
    /// test's own calls to the daemon need meanwhile.
    static func run(_ arguments: [String], onLine: @escaping @Sendable (String) -> Void = { _ in }) async throws -> (
        status: Int32, out: String
    ) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runWaiting(arguments, onLine: onLine) }) }.start()
        }
    }

    private static func runWaiting(_ arguments: [String], onLine: @escaping @Sendable (String) -> Void) throws -> (
        status: Int32, out: String
    ) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        // Not the test runner's own: a child left behind by a crashed test
        // process would hold swift test's output open, and it would wait for ever.
        process.standardError = FileHandle.nullDevice
        try process.runClosingFiles()
        var out = Data()
        while true {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            out.append(chunk)
            for line in String(decoding: chunk, as: UTF8.self).split(separator: "\n") { onLine(String(line)) }
        }
        process.waitForExit()
        return (process.exitStatus, String(decoding: out, as: UTF8.self))
    }

    // Three minutes: under the whole suite (2 cores, many daemons) a daemon, an import
    // and the example program took more than one (2 s alone).
    @Test("the dashboard shows each count, then each change of it", .timeLimit(.minutes(3)))
    func dashboard() async throws {
        let d = try DepotClientTests.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        // Once the first count is out, more trips come.
        let firstLine = AsyncStream<Void>.makeStream()
        let socket = d.socket, lineSeen = firstLine.continuation
        let run = Task {
            try await Self.run(["dashboard", "travel", "--socket", socket, "--updates", "2"]) { _ in lineSeen.yield() }
        }
        var lines = firstLine.stream.makeAsyncIterator()
        _ = await lines.next()
        _ = try await DepotClientTests.finish(
            client,
            try await client.importData(
                Array(tripsCSV(5, prefix: "n").utf8), store: "travel", entity: "Trip",
                options: ImportOptions(format: .csv)))
        let result = try await run.value
        #expect(result.status == 0)
        #expect(result.out == "Trip 30\nTrip 35\n")
    }

    @Test(
        "the consumer handles the history from where it left off and acknowledges it", .timeLimit(.minutes(3)))
    func consumer() async throws {
        let d = try DepotClientTests.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        _ = try await DepotClientTests.finish(
            client,
            try await client.update(
                store: "travel", entity: "Trip", where: "id == 't1'", set: ["budget": 7.0]))
        let first = try await Self.run(["consumer", "travel", "audit", "--socket", d.socket, "--transactions", "2"])
        #expect(first.status == 0)
        let lines = first.out.split(separator: "\n")
        #expect(
            lines.count == 2 && lines[0].hasSuffix("30 inserted, 0 updated, 0 deleted")
                && lines[1].hasSuffix("0 inserted, 1 updated, 0 deleted"), "\(first.out)")
        let audit = try #require(try await client.consumers(store: "travel").first)
        #expect(audit.name == "audit" && audit.lagTransactions == 0)
        // Run again: it goes on after its token, with the next transaction only.
        _ = try await DepotClientTests.finish(
            client, try await client.delete(store: "travel", entity: "Trip", where: "id == 't2'"))
        let second = try await Self.run(["consumer", "travel", "audit", "--socket", d.socket, "--transactions", "1"])
        #expect(second.out.hasSuffix("0 inserted, 0 updated, 1 deleted\n"), "\(second.out)")
        // A store that does not exist: the daemon's message, exit status 1.
        let wrong = try await Self.run(["consumer", "tarvel", "audit", "--socket", d.socket])
        #expect(wrong.status == 1 && wrong.out.contains("unknown_store"))
    }

    @Test("docs/swift-client.md holds the program as it is in examples/swift-client/main.swift")
    func documented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let program = try String(
            contentsOf: root.appendingPathComponent("examples/swift-client/main.swift"), encoding: .utf8)
        let doc = try String(contentsOf: root.appendingPathComponent("docs/swift-client.md"), encoding: .utf8)
        #expect(doc.contains("```swift\n" + program + "```\n"))
    }
}

/// Saves through DepotClient (issue 31): the answer, and a refusal's changes.
@Suite("DepotClient: saves", .serialized)
struct DepotClientSaveTests {
    @Test("save answers each change's outcome; a refused save throws with every failing change, nothing written")
    func save() async throws {
        let d = try DepotClientTests.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let before = try await client.count(FetchRequest(store: "travel", entity: "Trip"))
        let answer = try await client.save(
            store: "travel",
            SaveBody(changes: [
                SaveChange(
                    .insert, entity: "Trip",
                    record: ["id": "n1", "name": "New", "startDate": "2025-06-01", "budget": 10, "isFavorite": true]),
                SaveChange(.delete, entity: "Trip", identifier: "t1")
            ]))
        #expect(answer.changes.map(\.effect) == ["inserted", "deleted"] && answer.token != nil)
        #expect(try await client.count(FetchRequest(store: "travel", entity: "Trip")) == before)
        let refused = await #expect(throws: DepotClientError.self) {
            try await client.save(
                store: "travel",
                SaveBody(changes: [
                    SaveChange(.update, entity: "Trip", identifier: "n1", set: ["budget": 11]),
                    SaveChange(.delete, entity: "Trip", identifier: "t1")
                ]))
        }
        #expect(refused?.code == .saveRefused && refused?.status == 409)
        #expect(refused?.changes.map(\.index) == [1] && refused?.changes.first?.code == "not_found")
        // The update at index 0 was not applied.
        let kept = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", where: "id == 'n1'"))
        #expect(kept.first?["budget"] == 10)
    }

    struct Trip: DepotModel {
        static let entity = "Trip"
        var id: String
        var name: String
        var startDate: String
        var budget: Double
        var isFavorite: Bool
        var destination: String?
    }

    @Test("typed models: save { changes in … }, record(…) with its token, a conflict carrying its fields")
    func models() async throws {
        let d = try DepotClientTests.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let rome = Trip(id: "m1", name: "Rome", startDate: "2025-05-02", budget: 900, isFavorite: false)
        let saved = try await client.save(store: "travel", author: "app") { changes in
            try changes.insert(rome)
            try changes.upsert(Trip(id: "m2", name: "Oslo", startDate: "2025-06-01", budget: 700, isFavorite: true))
        }
        #expect(saved.changes.map(\.effect) == ["inserted", "inserted"])
        let read = try #require(try await client.record(Trip.self, id: "m1", store: "travel"))
        #expect(read.value.name == "Rome" && read.value.budget == 900 && read.token == saved.token)
        #expect(try await client.record(Trip.self, id: "none", store: "travel") == nil)
        // Another writer changes the budget; this one, read before, sets it too.
        let (_, newer) = try await client.patch(store: "travel", entity: "Trip", id: "m1", ["budget": 950])
        #expect(newer != nil && newer != read.token)
        let conflict = await #expect(throws: DepotClientError.self) {
            try await client.save(store: "travel") { changes in
                changes.update(Trip.self, id: "m1", set: ["budget": 990], ifToken: read.token)
            }
        }
        #expect(conflict?.code == .conflict && conflict?.status == 409)
        #expect(conflict?.conflicts.map(\.field) == ["budget"])
        #expect(conflict?.conflicts.first?.base == nil && conflict?.conflicts.first?.stored == 950)
        #expect(conflict?.conflicts.first?.yours == 990)
        // A disjoint field merges; the live query reaches the save's token with the write in its result.
        let (answer, token) = try await client.patch(
            store: "travel", entity: "Trip", id: "m1", ["name": "Roma"], ifToken: read.token)
        #expect(answer.changes.first?.effect == "updated" && token == answer.token)
        var seen: String?
        for try await state in client.live(FetchRequest(store: "travel", entity: "Trip", where: "id == 'm1'")) {
            if case .result(let records, let at) = state {
                seen = records.first?["name"]?.string
                #expect(Int(at ?? "") ?? 0 >= Int(answer.token ?? "") ?? .max)
                break
            }
        }
        #expect(seen == "Roma")
        #expect(try await client.delete(store: "travel", entity: "Trip", id: "m2").changes.first?.effect == "deleted")
        let gone = await #expect(throws: DepotClientError.self) {
            try await client.delete(store: "travel", entity: "Trip", id: "m2")
        }
        #expect(gone?.code == .notFound && gone?.message.contains(#"Trip "m2""#) == true)
    }
}
