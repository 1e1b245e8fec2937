import DepotEngine
import Foundation
import Testing

/// History as a change feed over the socket (DESIGN §11): values, consumers.
@Suite("depotd change feed", .serialized)
struct ChangeFeedTests {
    /// The test configuration, Trip keeping values, with `store` settings added.
    static func config(store: String = "") -> String {
        DaemonProcess.config().replacingOccurrences(
            of: "preserve_on_delete = [\"name\"]",
            with: "preserve_on_delete = [\"name\"]\n  history = \"values\""
        )
        .replacingOccurrences(of: "save_interval = \"1h\"", with: "save_interval = \"1h\"\n" + store)
    }

    /// Runs a job to its end; its last record.
    static func job(_ d: DaemonProcess, _ body: String) throws -> [String: Any] {
        let accepted = try d.request("POST", "/v1/jobs", body: body)
        #expect(accepted.status == 202, "\(accepted.body)")
        return try d.jobEnded(accepted.object["id"] as? String ?? "")
    }

    static func importTrips(_ d: DaemonProcess, _ csv: String, name: String) throws -> [String: Any] {
        let file = d.folder.appendingPathComponent("inbox/\(name)")
        try Data(csv.utf8).write(to: file)
        return try job(d, importBodyFor(file.path))
    }

    /// The body of a job importing Trips from `path`.
    static func importBodyFor(_ path: String) -> String {
        "{\"kind\":\"import\",\"store\":\"travel\",\"entity\":\"Trip\",\"path\":\"\(path)\"}"
    }

    static func changes(_ body: String) -> [[String: Any]] {
        (json(body)["transactions"] as? [[String: Any]] ?? []).flatMap { $0["changes"] as? [[String: Any]] ?? [] }
    }

    static func tokens(_ body: String) -> [String] {
        (json(body)["transactions"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
    }

    static func code(_ r: HTTPResult) -> String? { (r.object["error"] as? [String: Any])?["code"] as? String }

    @Test("history = \"values\": the API shows old and new values for imports, updates and deletes")
    func values() throws {
        let d = try DaemonProcess(config: Self.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        #expect(try Self.importTrips(d, tripsCSV(2), name: "a.csv")["inserted"] as? Int == 2)
        _ = try Self.job(
            d, #"{"kind":"update","store":"travel","entity":"Trip","where":"id == 't1'","set":{"budget":950.0}}"#)
        _ = try Self.job(d, #"{"kind":"delete","store":"travel","entity":"Trip","where":"id == 't0'"}"#)
        let changes = Self.changes(try d.request("GET", "/v1/stores/travel/history").body)
        #expect(changes.map { $0["kind"] as? String } == ["insert", "insert", "update", "delete"])
        let inserted = changes[0]["new"] as? [String: Any]
        #expect(inserted?["id"] as? String == "t0" && inserted?["destination"] as? String == "City 0")
        #expect(
            inserted?.keys.sorted() == [
                "budget", "destination", "endDate", "id", "isFavorite", "name", "notes",
                "startDate"
            ])
        #expect(changes[0]["old"] == nil)
        #expect(changes[2]["fields"] as? [String] == ["budget"])
        #expect((changes[2]["old"] as? [String: Any])?["budget"] as? Double == 1.5)
        #expect((changes[2]["new"] as? [String: Any])?["budget"] as? Double == 950)
        let deleted = changes[3]["old"] as? [String: Any]
        #expect(deleted?["name"] as? String == "Trip 0" && deleted?.count == 8)
        #expect((changes[3]["tombstone"] as? [String: Any])?.count == 2)
    }

    @Test("consumers over the socket: create, list with lag, read, ack, prune held back, reset, drop, metrics, restart")
    func consumers() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder, config: Self.config())
        for i in 0..<3 { _ = try Self.importTrips(d, tripsCSV(1, prefix: "c\(i)-"), name: "c\(i).csv") }
        let all = Self.tokens(try d.request("GET", "/v1/stores/travel/history").body)
        #expect(all.count == 3)

        let created = try d.request(
            "POST", "/v1/stores/travel/consumers", body: #"{"name":"indexer","from":"beginning"}"#)
        #expect(created.status == 201, "\(created.body)")
        #expect(created.object["lag_transactions"] as? Int == 3 && created.object["state"] as? String == "active")
        let now = try d.request("POST", "/v1/stores/travel/consumers", body: #"{"name":"audit"}"#)
        #expect(now.object["token"] as? String == all[2] && now.object["lag_transactions"] as? Int == 0)
        #expect(
            Self.code(try d.request("POST", "/v1/stores/travel/consumers", body: #"{"name":"audit"}"#)) == "conflict")
        #expect(try d.request("POST", "/v1/stores/travel/consumers", body: #"{"name":"audit"}"#).status == 409)
        #expect(try d.request("POST", "/v1/stores/travel/consumers", body: #"{"from":"now"}"#).status == 400)
        #expect(
            Self.code(
                try d.request(
                    "POST", "/v1/stores/travel/consumers",
                    body: #"{"name":"x","from":"yesterday"}"#)) == "invalid_token")

        let listed = try d.request("GET", "/v1/stores/travel/consumers").object["consumers"] as? [[String: Any]] ?? []
        #expect(listed.map { $0["name"] as? String } == ["audit", "indexer"])
        #expect(listed.allSatisfy { $0["acknowledged_at"] is String && $0["lag_seconds"] is Double })

        // Reading after the consumer's token; reading does not move it.
        #expect(
            Self.tokens(try d.request("GET", "/v1/stores/travel/history?consumer=indexer&limit=2").body)
                == Array(all[0...1]))
        #expect(Self.tokens(try d.request("GET", "/v1/stores/travel/history?consumer=indexer").body) == all)
        #expect(try d.request("GET", "/v1/stores/travel/history?consumer=indexer&after=1").status == 400)
        let unknown = try d.request("GET", "/v1/stores/travel/history?consumer=indexr")
        #expect(unknown.status == 404 && Self.code(unknown) == "unknown_consumer")

        // Pruning stops at the indexer, and says so.
        let held = try d.request("DELETE", "/v1/stores/travel/history?before=\(all[2])")
        #expect(held.object["pruned"] as? Int == 0)
        #expect((held.object["held_back_by"] as? [String: Any])?["consumer"] as? String == "indexer")
        let acked = try d.request("POST", "/v1/stores/travel/consumers/indexer/ack", body: "{\"token\":\"\(all[0])\"}")
        #expect(acked.status == 200 && acked.object["lag_transactions"] as? Int == 2)
        #expect(
            try d.request("POST", "/v1/stores/travel/consumers/indexer/ack", body: #"{"token":"999"}"#).status == 400)
        let prune = try Self.job(d, "{\"kind\":\"prune\",\"store\":\"travel\",\"before\":\"\(all[2])\"}")
        #expect(prune["deleted"] as? Int == 1)
        #expect((prune["held_back_by"] as? [String: Any])?["token"] as? String == all[0])

        let metrics = try d.request("GET", "/v1/metrics").body
        #expect(metrics.contains("depot_consumer_lag_transactions{store=\"travel\",consumer=\"indexer\"} 2"))
        #expect(metrics.contains("depot_consumer_lag_transactions{store=\"travel\",consumer=\"audit\"} 0"))
        #expect(metrics.contains("depot_consumer_lag_seconds{store=\"travel\",consumer=\"indexer\"} "))

        // A restart keeps the consumers where they were.
        #expect(d.stop() == 0)
        d = try DaemonProcess(folder: folder)
        defer { d.stop() }
        let again = try d.request("GET", "/v1/stores/travel/consumers").object["consumers"] as? [[String: Any]] ?? []
        #expect(again.map { $0["token"] as? String } == [all[2], all[0]])
        #expect(
            Self.tokens(try d.request("GET", "/v1/stores/travel/history?consumer=indexer").body) == Array(all[1...]))

        let reset = try d.request("POST", "/v1/stores/travel/consumers/indexer/reset", body: #"{"from":"now"}"#)
        #expect(reset.object["token"] as? String == all[2])
        #expect(try d.request("DELETE", "/v1/stores/travel/consumers/indexer").status == 200)
        #expect(try d.request("DELETE", "/v1/stores/travel/consumers/indexer").status == 404)
        #expect(
            try d.request("POST", "/v1/stores/travel/consumers/indexer/ack", body: "{\"token\":\"\(all[2])\"}")
                .status == 404)
    }

    @Test("history_retention runs as the daemon starts, held back by a consumer, which the log and STATUS= say")
    func retentionAtStart() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder, config: Self.config())
        for i in 0..<3 { _ = try Self.importTrips(d, tripsCSV(1, prefix: "r\(i)-"), name: "r\(i).csv") }
        let all = Self.tokens(try d.request("GET", "/v1/stores/travel/history").body)
        _ = try d.request("POST", "/v1/stores/travel/consumers", body: "{\"name\":\"slow\",\"from\":\"\(all[0])\"}")
        #expect(d.stop() == 0)
        // Keep nothing: everything is older than zero seconds, except what the consumer holds.
        try Data(Self.config(store: "history_retention = \"0s\"").utf8)
            .write(to: folder.appendingPathComponent("depot.toml"))
        d = try DaemonProcess(folder: folder)
        defer { d.stop() }
        // The first pass runs right after READY and ends with its STATUS= line.
        let status = d.notify.waitFor(prefix: "STATUS=history retention", timeout: 60)
        #expect(status == "STATUS=history retention: travel pruned 1, held back by slow")
        #expect(Self.tokens(try d.request("GET", "/v1/stores/travel/history").body) == Array(all[1...]))
        #expect(d.log.contains("<5>history prune held back by a consumer CONSUMER=slow STORE=travel TOKEN=\(all[0])"))
        #expect(d.log.contains("<6>history pruned PRUNED=0") == false)
    }

    @Test(
        "a live fetch with changes: a result, then records entering and leaving; since resumes across a restart or says history_expired"
    )
    func liveChanges() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder, config: DaemonProcess.config())
        _ = try Self.importTrips(d, tripsCSV(3), name: "three.csv")  // t0, t1, t2 in City 0, 1, 2
        let fetch = "/v1/stores/travel/entities/Trip/fetch"
        let watch = #"{"where":"destination == 'City 1'","fields":["destination"],"watch":true,"changes":true"#
        func update(_ id: String, _ city: String) {
            _ = try? Self.job(
                d,
                "{\"kind\":\"update\",\"store\":\"travel\",\"entity\":\"Trip\","
                    + "\"where\":\"id == '\(id)'\",\"set\":{\"destination\":\"\(city)\"}}")
        }
        var events: [[String: Any]] = []
        _ = try UnixHTTP.stream(socket: d.socket, method: "POST", path: fetch, body: watch + "}") { line in
            events.append(json(line))
            switch events.count {
            case 1: update("t0", "City 1")  // enters
            case 2: _ = try? Self.job(d, #"{"kind":"delete","store":"travel","entity":"Trip","where":"id == 't1'"}"#)
            case 3:
                update("t0", "City 1")  // unchanged: no event; then a change elsewhere, none either
                update("t2", "City 9")
                update("t0", "City 7")  // leaves
            default: break
            }
            return events.count == 4
        }
        #expect(events.map { $0["type"] as? String } == ["result", "changes", "changes", "changes"])
        #expect((events[0]["records"] as? [[String: Any]])?.map { $0["id"] as? String } == ["t1"])
        #expect((events[0]["records"] as? [[String: Any]])?.first?.keys.sorted() == ["destination", "id"])
        #expect((events[1]["inserted"] as? [[String: Any]])?.map { $0["id"] as? String } == ["t0"])
        #expect((events[1]["updated"] as? [Any])?.isEmpty == true && (events[1]["deleted"] as? [Any])?.isEmpty == true)
        #expect(events[2]["deleted"] as? [String] == ["t1"])
        #expect(events[3]["deleted"] as? [String] == ["t0"])
        let tokens = events.compactMap { $0["token"] as? String }
        #expect(tokens.count == 4 && tokens == tokens.sorted { Int($0)! < Int($1)! })

        // Refused combinations: 400 before any stream.
        for body in [
            #"{"changes":true}"#, #"{"since":"1","watch":true}"#, #"{"watch":true,"changes":true,"limit":5}"#,
            #"{"watch":true,"changes":true,"section_by":"destination"}"#,
            #"{"watch":true,"changes":true,"result":"count"}"#, #"{"watch":true,"changes":true,"since":"x"}"#,
            #"{"watch":true,"changes":true,"since":"999"}"#
        ] {
            #expect(try d.request("POST", fetch, body: body).status == 400, "\(body)")
        }

        // Resume after the second event, across a restart: what came after it, at once.
        #expect(d.stop() == 0)
        d = try DaemonProcess(folder: folder)
        var resumed: [[String: Any]] = []
        _ = try UnixHTTP.stream(
            socket: d.socket, method: "POST", path: fetch,
            body: watch + ",\"since\":\"\(tokens[1])\"}"
        ) { line in
            resumed.append(json(line))
            if resumed.count == 1 { update("t2", "City 1") }
            return resumed.count == 2
        }
        #expect(resumed.map { $0["type"] as? String } == ["changes", "changes"])
        // t1 was deleted, t0 and t2 no longer match: the feed cannot know
        // which of them the client had, so all three are in deleted.
        #expect((resumed[0]["deleted"] as? [String])?.sorted() == ["t0", "t1", "t2"])
        #expect((resumed[1]["inserted"] as? [[String: Any]])?.map { $0["id"] as? String } == ["t2"])

        // Once pruned, since says history_expired and the stream ends.
        let latest = Self.tokens(try d.request("GET", "/v1/stores/travel/history?limit=1000").body).last ?? ""
        #expect(try d.request("DELETE", "/v1/stores/travel/history?before=\(latest)").status == 200)
        let expired = try UnixHTTP.stream(
            socket: d.socket, method: "POST", path: fetch,
            body: watch + ",\"since\":\"\(tokens[1])\"}"
        ) { _ in false }
        #expect(expired.count == 1 && json(expired[0])["type"] as? String == "history_expired")
        d.stop()
    }

    /// Issue #35 (1,000 live fetches): streams that open on one fetch with
    /// no commit between share the first read; each then follows on its
    /// own, and a stream opened after a commit reads the result again.
    @Test(
        "live fetches opened together share their first result and then see the same changes; after a commit a new one reads afresh"
    )
    func sharedFirstResult() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let d = try DaemonProcess(folder: folder, config: DaemonProcess.config())
        defer { d.stop() }
        _ = try Self.importTrips(d, tripsCSV(12), name: "twelve.csv")  // City 1: t1, t10
        let fetch = "/v1/stores/travel/entities/Trip/fetch"
        let watch = #"{"where":"destination == 'City 1'","watch":true,"changes":true}"#
        func shared() throws -> Int? { try d.metric("depot_live_results_shared_total") }
        #expect(try shared() == 0)
        var first: [[String: Any]] = [], second: [[String: Any]] = []
        _ = try UnixHTTP.stream(socket: d.socket, method: "POST", path: fetch, body: watch) { line in
            first.append(json(line))
            if first.count == 1 {
                // The second stream opens with no commit since the first's result.
                _ = try? UnixHTTP.stream(socket: d.socket, method: "POST", path: fetch, body: watch) { line in
                    second.append(json(line))
                    if second.count == 1 {
                        _ = try? Self.job(
                            d,
                            #"{"kind":"update","store":"travel","entity":"Trip","where":"id == 't2'","set":{"destination":"City 1"}}"#
                        )
                    }
                    return second.count == 2
                }
            }
            return first.count == 2
        }
        #expect(try shared() == 1)
        #expect(first.map { $0["type"] as? String } == ["result", "changes"])
        #expect(first.count == 2 && second.count == 2)
        for (a, b) in zip(first, second) { #expect(NSDictionary(dictionary: a).isEqual(to: b), "\(a) \(b)") }
        #expect((first[0]["records"] as? [[String: Any]])?.compactMap { $0["id"] as? String }.sorted() == ["t1", "t10"])
        #expect((first[1]["inserted"] as? [[String: Any]])?.map { $0["id"] as? String } == ["t2"])

        // After that commit, a new stream reads the result again: t2 in it, the newer token.
        let third = try UnixHTTP.stream(socket: d.socket, method: "POST", path: fetch, body: watch) { _ in true }.map(
            json)
        #expect(try shared() == 1)
        #expect(
            (third.first?["records"] as? [[String: Any]])?.compactMap { $0["id"] as? String }.sorted()
                == ["t1", "t10", "t2"])
        #expect(third.first?["token"] as? String == first[1]["token"] as? String)
    }

    @Test("a client that hangs up ends its stream at once, not at the next commit: live fetches, followers, job events")
    func hangUpEndsStream() throws {
        let d = try DaemonProcess(config: Self.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try Self.importTrips(d, tripsCSV(3), name: "three.csv")
        #expect(try d.streamsOpen() == 0)
        let requests = [
            (
                "POST", "/v1/stores/travel/entities/Trip/fetch",
                #"{"where":"destination == 'City 1'","watch":true,"changes":true}"#
            ),
            ("POST", "/v1/stores/travel/entities/Trip/fetch", #"{"result":"count","watch":true}"#),
            ("GET", "/v1/stores/travel/history?follow=true", ""),
            ("GET", "/v1/events", "")
        ]
        var sockets: [Int32] = []
        for (method, path, body) in requests {
            let fd = try UnixHTTP.connect(d.socket)
            UnixHTTP.send(
                fd,
                Data(
                    ("\(method) \(path) HTTP/1.1\r\nHost: depot\r\nConnection: close\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8))
            sockets.append(fd)
        }
        try d.waitForStreams(requests.count)
        for fd in sockets { close(fd) }
        // No commit comes: before the fix, each stream lingered until its next write.
        try d.waitForStreams(0)
        // The daemon still serves streams afterwards.
        let follow = try UnixHTTP.stream(socket: d.socket, path: "/v1/stores/travel/history?follow=true&limit=1") { _ in
            true
        }
        #expect(follow.count == 1)
    }

    /// Issue 35, item 8: a page of ten transactions held a whole import's
    /// save (170 MB); pages hold at most max_changes changes.
    @Test(
        "a history page holds at most 10,000 changes; a large transaction comes in parts that add up, for consumers too"
    )
    func pagesByChanges() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try Self.importTrips(d, tripsCSV(100_000), name: "many.csv")  // one save: one transaction
        let history = "/v1/stores/travel/history"
        var after: String?
        var tokens: [String] = []
        var ids = Set<String>()
        while tokens.count < 20 {
            let page = try d.request("GET", history + "?limit=10" + (after.map { "&after=\($0)" } ?? ""))
            let transactions = page.object["transactions"] as? [[String: Any]] ?? []
            guard let last = transactions.last else { break }
            let changes = transactions.flatMap { $0["changes"] as? [[String: Any]] ?? [] }
            #expect(changes.count <= 10_000)
            for c in changes { ids.insert(c["identifier"] as? String ?? "") }
            after = last["token"] as? String
            tokens.append((after ?? "") + (last["continues"] as? Bool == true ? "+" : ""))
        }
        #expect(tokens == (1...9).map { "1.\($0 * 10_000)+" } + ["1"], "\(tokens)")
        #expect(ids.count == 100_000)
        // A follower gets it in the same parts, one a line.
        let lines = try UnixHTTP.stream(socket: d.socket, path: history + "?follow=true") {
            json($0)["token"] as? String == "1"
        }
        #expect(lines.map { json($0)["token"] as? String ?? "" } == (1...9).map { "1.\($0 * 10_000)" } + ["1"])
        #expect(lines.allSatisfy { (json($0)["changes"] as? [Any])?.count == 10_000 })
        let small = try d.request("GET", history + "?max_changes=3")
        #expect((small.object["transactions"] as? [[String: Any]])?.first?["token"] as? String == "1.3")
        #expect(try d.request("GET", history + "?max_changes=0").status == 400)

        // A consumer reads it in parts too, and acknowledges the whole.
        #expect(
            try d.request("POST", "/v1/stores/travel/consumers", body: #"{"name":"indexer","from":"beginning"}"#).status
                == 201)
        let first =
            try d.request("GET", history + "?consumer=indexer&max_changes=40000").object["transactions"]
            as? [[String: Any]]
        #expect(first?.last?["token"] as? String == "1.40000")
        let next = try d.request("GET", history + "?consumer=indexer&after=1.40000&max_changes=40000")
        #expect(
            (next.object["transactions"] as? [[String: Any]])?.last?["token"] as? String == "1.80000",
            "\(next.body.prefix(200))")
        let part = try d.request("POST", "/v1/stores/travel/consumers/indexer/ack", body: #"{"token":"1.40000"}"#)
        #expect(part.status == 400 && Self.code(part) == "invalid_token", "\(part.body)")
        #expect(try d.request("POST", "/v1/stores/travel/consumers/indexer/ack", body: #"{"token":"1"}"#).status == 200)
        #expect(try d.request("GET", history + "?consumer=indexer&after=1.40000").status == 400)
    }

    @Test(
        "live fetches of an entity that is dropped end with entity_dropped, with and without changes",
        .timeLimit(.minutes(2)))
    func droppedEntityEndsLiveFetches() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let put = try d.request(
            "PUT", "/v1/stores/travel/entities/Codes", body: #"{"identifier": "code", "fields": {"code": "string"}}"#)
        #expect(put.status == 201, "\(put.body)")
        let fetch = "/v1/stores/travel/entities/Codes/fetch"
        var withChanges: [[String: Any]] = [], counts: [[String: Any]] = []
        // Each stream read to its end: the daemon must close both.
        _ = try UnixHTTP.stream(
            socket: d.socket, method: "POST", path: fetch, body: #"{"watch":true,"changes":true}"#
        ) { line in
            withChanges.append(json(line))
            if withChanges.count == 1 {
                _ = try? UnixHTTP.stream(
                    socket: d.socket, method: "POST", path: fetch, body: #"{"result":"count","watch":true}"#
                ) { line in
                    counts.append(json(line))
                    if counts.count == 1 {
                        let dropped = try? d.request("DELETE", "/v1/stores/travel/entities/Codes")
                        #expect(dropped?.status == 204, "\(dropped?.body ?? "")")
                    }
                    return false
                }
            }
            return false
        }
        #expect(withChanges.map { $0["type"] as? String } == ["result", "entity_dropped"], "\(withChanges)")
        #expect((counts.first?["result"] as? [String: Any])?["count"] as? Int == 0, "\(counts)")
        #expect(counts.count == 2 && counts.last?["type"] as? String == "entity_dropped", "\(counts)")
        #expect((counts.last?["message"] as? String)?.contains(#"entity "Codes" was dropped"#) == true)
        #expect(try d.streamsOpen() == 0)
    }

}
