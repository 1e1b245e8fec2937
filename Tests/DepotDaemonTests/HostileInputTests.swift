import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

@testable import DepotDaemon

/// Every way a hostile or careless user once crashed depotd (issue 17), each
/// tried against a running daemon: each answer is a clear error (or the right
/// result), and after each the daemon still answers `/v1/health`.
@Suite("depotd under hostile input", .serialized, .timeLimit(.minutes(5)))
struct HostileInputTests {
    /// The error object of an answer.
    func error(_ r: HTTPResult) -> (code: String, message: String, position: Int?) {
        let e = r.object["error"] as? [String: Any] ?? [:]
        return (e["code"] as? String ?? "", e["message"] as? String ?? "", e["position"] as? Int)
    }

    func healthy(_ d: DaemonProcess, _ after: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let health = try? d.request("GET", "/v1/health")
        #expect(health?.status == 200, "no answer to /v1/health after \(after)", sourceLocation: sourceLocation)
        #expect(d.process.isRunning, "depotd ended after \(after)", sourceLocation: sourceLocation)
    }

    func fetch(_ d: DaemonProcess, where predicate: String, result: String = "count") throws -> HTTPResult {
        try d.request(
            "POST", "/v1/stores/travel/entities/Trip/fetch",
            body: "{\"result\":\"\(result)\",\"where\":\(JSONText.quoted(predicate))}")
    }

    func importTrips(_ d: DaemonProcess, _ count: Int) throws {
        let file = d.folder.appendingPathComponent("inbox/trips.csv")
        try Data(tripsCSV(count).utf8).write(to: file)
        let accepted = try d.request(
            "POST", "/v1/jobs",
            body: "{\"kind\":\"import\",\"store\":\"travel\",\"entity\":\"Trip\",\"path\":\"\(file.path)\"}")
        #expect(try d.jobEnded(accepted.object["id"] as? String ?? "")["inserted"] as? Int == count)
    }

    @Test("durations out of range: 400 from the history route and at the job door, never a trap")
    func durations() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        for age in ["1e300s", "99999999999999d", "-5s", "nan", "1e3s", "7x"] {
            let r = try d.request("DELETE", "/v1/stores/travel/history?older_than=\(age)")
            #expect(r.status == 400, "\(age): \(r.body)")
            #expect(error(r).code == "invalid_argument")
            #expect(error(r).message.contains("must be a duration from 0s to 36500d"), "\(error(r).message)")
            healthy(d, "older_than=\(age)")
        }
        #expect(try d.request("DELETE", "/v1/stores/travel/history?older_than=36500d").body == "{\"pruned\":0}\n")
        #expect(try d.request("DELETE", "/v1/stores/travel/history").status == 400)
        #expect(try d.request("DELETE", "/v1/stores/travel/history?before=1&older_than=1d").status == 400)
        let job = try d.request("POST", "/v1/jobs", body: #"{"kind":"prune","store":"travel","older_than":"1e300s"}"#)
        #expect(job.status == 400)
        #expect(error(job).message.contains("older_than must be a duration"))
        #expect((try d.request("GET", "/v1/jobs").object["jobs"] as? [Any])?.isEmpty == true)
        healthy(d, "a prune job of 1e300s")
    }

    @Test("bad job settings are refused at the door with 400, not failed later")
    func jobDoor() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        try importTrips(d, 10)
        let file = d.folder.appendingPathComponent("inbox/trips.csv").path
        let refused: [(String, String, String)] = [
            (
                #"{"kind":"import","store":"travel","entity":"Trip","path":"\#(file)","on_conflict":"merge"}"#,
                "invalid_argument", "on_conflict must be"
            ),
            (
                #"{"kind":"import","store":"travel","entity":"Trip","path":"\#(file)","max_rejects":"1e300"}"#,
                "invalid_argument", "max_rejects must be"
            ),
            (
                #"{"kind":"import","store":"travel","entity":"Trip","path":"\#(file)","format":"xml"}"#,
                "invalid_argument", "format must be"
            ),
            (
                #"{"kind":"import","store":"travel","entity":"Trap","path":"\#(file)"}"#, "unknown_entity",
                "did you mean"
            ),
            (#"{"kind":"import","store":"travel","entity":"Trip"}"#, "invalid_argument", "names a path"),
            (
                #"{"kind":"dedupe","store":"travel","entity":"Trip","by":["name"],"keep":"keep-middle"}"#,
                "invalid_argument", "keep must be"
            ),
            (#"{"kind":"dedupe","store":"travel","entity":"Trip","by":["nam"]}"#, "unknown_field", "did you mean"),
            (
                #"{"kind":"delete","store":"travel","entity":"Trip","where":"budget >"}"#, "invalid_predicate",
                "expected a value"
            ),
            (
                #"{"kind":"update","store":"travel","entity":"Trip","where":"id == 't1'","set":{"budget":"lots"}}"#,
                "type_mismatch", "budget"
            ),
            (
                #"{"kind":"update","store":"travel","entity":"Trip","where":"id == 't1'","set":{"id":"x"}}"#,
                "invalid_argument", "identifier"
            ),
            (
                #"{"kind":"update","store":"travel","entity":"Trip","set":{"budget":[1, 2]}}"#,
                "invalid_argument", #""set.budget" must be a string, number, boolean or null, not an array"#
            ),
            (
                #"{"kind":"export","store":"travel","entity":"Trip","format":"xlsx"}"#, "invalid_argument",
                "ndjson or csv"
            ),
            (#"{"kind":"prune","store":"travel","before":"yesterday"}"#, "invalid_token", "not a history token"),
            (#"{"kind":"prune","store":"travel"}"#, "invalid_argument", "before (a token) or older_than"),
            (#"{"kind":"launch","store":"travel"}"#, "invalid_argument", "kind must be one of")
        ]
        for (body, code, fragment) in refused {
            let r = try d.request("POST", "/v1/jobs", body: body)
            #expect((400...404).contains(r.status), "\(body): \(r.status)")
            #expect(error(r).code == code, "\(body): \(r.body)")
            #expect(error(r).message.contains(fragment), "\(body): \(error(r).message)")
        }
        // Nothing was queued but the first import.
        #expect((try d.request("GET", "/v1/jobs").object["jobs"] as? [Any])?.count == 1)
        // An upload with a bad option is refused before a byte is spooled.
        let upload = try UnixHTTP.request(
            socket: d.socket, method: "POST",
            path: "/v1/stores/travel/entities/Trip/import?format=csv&on_conflict=merge",
            body: Data(tripsCSV(5).utf8), contentType: "text/csv")
        #expect(upload.status == 400)
        #expect(error(upload).message.contains("on_conflict must be"))
        let spool = d.folder.appendingPathComponent("state/spool").path
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []).isEmpty)
        healthy(d, "refused jobs")
    }

    @Test("predicates that overflowed the stack or SQLite's parser: answers or 400s with a position")
    func predicates() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        try importTrips(d, 200)
        let over = try fetch(d, where: "budget > 1").object["count"] as? Int ?? -1
        #expect(over > 0)
        // 50,000 '!' (an even number: the predicate itself).
        let bangs = try fetch(d, where: String(repeating: "!", count: 50_000) + "budget > 1")
        #expect(bangs.object["count"] as? Int == over)
        healthy(d, "50,000 '!'")
        // 50,000 nested parentheses: refused at the 257th.
        let parens = try fetch(
            d, where: String(repeating: "(", count: 50_000) + "budget > 1" + String(repeating: ")", count: 50_000))
        #expect(parens.status == 400)
        #expect(error(parens).code == "invalid_predicate")
        #expect(error(parens).position == 257)
        healthy(d, "50,000 parentheses")
        // 40,000 AND'ed terms: more values than SQLite binds; refused with a hint.
        let terms = try fetch(d, where: Array(repeating: "budget > 1", count: 40_000).joined(separator: " AND "))
        #expect(terms.status == 400)
        #expect(error(terms).code == "invalid_predicate")
        #expect(error(terms).message.contains("IN {"))
        #expect(error(terms).position != nil)
        healthy(d, "40,000 AND terms")
        // About 90 OR'ed identifiers (SQLite's parser stack overflowed), and a thousand.
        for n in [90, 1_000] {
            let ors = (0..<n).map { #"id == "t\#($0)""# }.joined(separator: " OR ")
            let r = try fetch(d, where: ors)
            #expect(r.status == 200, "\(n): \(r.body)")
            #expect(r.object["count"] as? Int == min(n, 200))
        }
        // 10,000 NOT.
        let nots = try fetch(d, where: String(repeating: "NOT ", count: 10_000) + "budget > 1")
        #expect(nots.object["count"] as? Int == over)
        // Deep AND/OR alternation: refused with a position, not a 500.
        var deep = "budget > 1"
        for level in 0..<300 { deep = level % 2 == 0 ? "(id == 'x' OR \(deep))" : "(budget > 0 AND \(deep))" }
        let alternating = try fetch(d, where: deep)
        #expect(alternating.status == 400, "\(alternating.body)")
        #expect(error(alternating).code == "invalid_predicate")
        healthy(d, "deep predicates")
        // The same through a batch job and an aggregate.
        let job = try d.request(
            "POST", "/v1/jobs",
            body: "{\"kind\":\"delete\",\"store\":\"travel\",\"entity\":\"Trip\",\"where\":"
                + JSONText.quoted(
                    String(repeating: "(", count: 300) + "budget > 1" + String(repeating: ")", count: 300)) + "}")
        #expect(job.status == 400)
        #expect(error(job).position == 257)
        let aggregate = try d.request(
            "POST", "/v1/stores/travel/entities/Trip/aggregate",
            body: "{\"field\":\"budget\",\"where\":" + JSONText.quoted(deep) + "}")
        #expect(aggregate.status == 400)
        healthy(d, "deep predicates in jobs and aggregates")
    }

    @Test("numbers in bodies and queries are range-checked and the answer names the key")
    func numbers() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        for (body, key) in [
            (#"{"limit": 1e300}"#, "limit"), (#"{"limit": -1}"#, "limit"), (#"{"offset": 1.5}"#, "offset"),
            (#"{"limit": 99999999999999999999}"#, "limit")
        ] {
            let r = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: body)
            #expect(r.status == 400)
            #expect(error(r).message.hasPrefix("\"\(key)\" must be a whole number"), "\(body): \(error(r).message)")
        }
        // A predicate's arguments are scalars: the answer names the one that is not.
        let argument = try d.request(
            "POST", "/v1/stores/travel/entities/Trip/fetch",
            body: #"{"where": "name == $n", "arguments": {"n": {"a": 1}}}"#)
        #expect(argument.status == 400)
        #expect(error(argument).message == #""arguments.n" must be a string, number, boolean or null, not an object"#)
        let dup = try d.request(
            "POST", "/v1/stores/travel/entities/Trip/duplicates", body: #"{"by": ["name"], "limit": 1e300}"#)
        #expect(error(dup).message.hasPrefix("\"limit\" must be a whole number"))
        let set = try d.request(
            "POST", "/v1/jobs", body: #"{"kind":"update","store":"travel","entity":"Trip","set":{"budget":1e400}}"#)
        #expect(set.status == 400)
        for query in ["limit=1e300", "limit=-1", "limit=0", "after=-1", "after=1e300"] {
            #expect(try d.request("GET", "/v1/stores/travel/history?\(query)").status == 400, "\(query)")
        }
        for query in ["limit=1e3", "limit=-1", "limit=", "limit=+5"] {
            let r = try d.request("GET", "/v1/stores/travel/check?\(query)")
            #expect(r.status == 400, "\(query)")
            #expect(error(r).message.hasPrefix("limit must be a whole number"), "\(query): \(error(r).message)")
        }
        // A count past Int.max is "very many", capped like any large one.
        for path in [
            "/v1/stores/travel/check?limit=21252279975046170925640712192",
            "/v1/stores/travel/history?limit=99999999999999999999999"
        ] {
            #expect(try d.request("GET", path).status == 200, "\(path)")
        }
        healthy(d, "out-of-range numbers")
    }

    @Test("spool files go when an upload's job fails, and at start when no job reads them")
    func spool() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder)
        let spool = folder.appendingPathComponent("state/spool")
        func spooled() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: spool.path)) ?? [] }
        let upload = try UnixHTTP.request(
            socket: d.socket, method: "POST",
            path: "/v1/stores/travel/entities/Trip/import?format=csv&max_rejects=0",
            body: Data((0..<2_000).map { _ in UInt8.random(in: 0...255) }), contentType: "text/csv")
        #expect(upload.status == 202)
        #expect(try d.jobEnded(upload.object["id"] as? String ?? "")["state"] as? String == "failed")
        #expect(spooled().isEmpty)
        #expect(d.stop() == 0)
        // A file left by an upload cut short, with no job: removed at start.
        try FileManager.default.createDirectory(at: spool, withIntermediateDirectories: true)
        try Data("id\n".utf8).write(to: spool.appendingPathComponent("jorphan.csv"))
        d = try DaemonProcess(folder: folder)
        #expect(spooled().isEmpty)
        healthy(d, "a restart with an orphan spool file")
        d.stop()
    }

    @Test(
        "a persisted job that cannot run is marked failed on start with its reason; the daemon serves, again and again")
    func unrunnablePersistedJobs() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder)
        #expect(d.stop() == 0)
        // What an older daemon, or a hand edit, could have left in depot_jobs.
        let prune =
            #"{"id":"jprune","kind":"prune","store":"travel","state":"queued","author":"x","#
            + #""created":"2026-01-01T00:00:00.000Z","older_than":"1e300s"}"#
        let broken = #"{"id":"jbroken","kind":"import","store":"travel","entity":"Trip","state":7}"#
        let store = folder.appendingPathComponent("state/travel.sqlite").path
        for (id, record) in [("jprune", prune), ("jbroken", broken), ("jgarbage", "not json at all")] {
            let quoted = "'" + record.replacingOccurrences(of: "'", with: "''") + "'"
            let sql = "INSERT INTO depot_jobs(id, record) VALUES ('\(id)', \(quoted));"
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            p.arguments = [store, sql]
            try p.runClosingFiles()
            p.waitForExit()
            #expect(p.exitStatus == 0)
        }
        for start in 1...2 {
            d = try DaemonProcess(folder: folder)
            healthy(d, "start \(start) with unrunnable jobs")
            let pruneJob = try d.request("GET", "/v1/jobs/jprune").object
            #expect(pruneJob["state"] as? String == "failed")
            #expect((pruneJob["error"] as? String)?.contains("older_than must be a duration") == true, "\(pruneJob)")
            let brokenJob = try d.request("GET", "/v1/jobs/jbroken").object
            #expect(brokenJob["state"] as? String == "failed")
            #expect((brokenJob["error"] as? String)?.contains("could not be read back") == true, "\(brokenJob)")
            #expect(try d.request("GET", "/v1/jobs/jgarbage").status == 404)
            #expect(d.log.contains("a job record cannot be read and is not resumed"))
            #expect(d.stop() == 0)
        }
    }

    @Test("depotd --check-config names file, key and range for every value out of range, and never traps")
    func checkConfig() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases: [(String, String, String)] = [
            ("idle_timeout = \"1e300s\"", "daemon.idle_timeout", "must be a duration from 1s to 1d"),
            ("idle_timeout = -5", "daemon.idle_timeout", "must be a duration from 1s to 1d"),
            ("idle_timeout = 9223372036854775807", "daemon.idle_timeout", "must be a duration"),
            ("max_request_bytes = -1", "daemon.max_request_bytes", "must be a whole number from 1024 to 1073741824"),
            ("max_request_bytes = 0", "daemon.max_request_bytes", "must be a whole number from 1024"),
            ("max_upload_bytes = -1", "daemon.max_upload_bytes", "must be a whole number from 1 to 1099511627776"),
            ("socket_mode = \"+777\"", "daemon.socket_mode", "must be an octal mode"),
            ("socket_mode = \"-0\"", "daemon.socket_mode", "must be an octal mode"),
            ("socket_mode = \"1777\"", "daemon.socket_mode", "must be an octal mode")
        ]
        let storeCases: [(String, String, String)] = [
            ("save_interval = \"1e300s\"", "store[0].save_interval", "must be a duration from 1ms to 1d"),
            (
                "history_retention = \"99999999999999d\"", "store[0].history_retention",
                "must be a duration from 0s to 36500d"
            ),
            ("cache_mb = 9223372036854775807", "store[0].cache_mb", "must be a whole number from 1 to 65536")
        ]
        let base = DaemonProcess.config()
        var texts: [(String, String, String)] = cases.map { line, key, message in
            (
                base.replacingOccurrences(of: "[daemon]\n", with: "[daemon]\n\(line)\n")
                    .replacingOccurrences(
                        of: "socket_mode = \"0660\"\n",
                        with: line.hasPrefix("socket_mode") ? "" : "socket_mode = \"0660\"\n"),
                key, message
            )
        }
        texts += storeCases.map { line, key, message in
            (
                base.replacingOccurrences(
                    of: "save_interval = \"1h\"",
                    with: line.hasPrefix("save_interval") ? line : "save_interval = \"1h\"\n\(line)"),
                key, message
            )
        }
        texts.append(
            (DaemonProcess.config(saveEvery: 0), "store[0].save_every", "must be a whole number from 1 to 2147483647"))
        texts.append(
            (
                base.replacingOccurrences(
                    of: "[[store]]",
                    with:
                        "[[watch]]\npath = \"inbox\"\nstore = \"travel\"\nentity = \"Trip\"\nmax_rejects = \"1e300\"\n[[store]]"
                ),
                "watch[0].max_rejects", "must be a count"
            ))
        for (text, key, message) in texts {
            let file = folder.appendingPathComponent("depot.toml")
            try Data(text.utf8).write(to: file)
            let (status, said) = try DaemonProcess.checkConfig(file.path)
            #expect(status == 78, "\(key): exit \(status), \(said)")
            #expect(said.contains("\(file.path): \(key): \(message)"), "\(key): \(said)")
        }
    }

    /// Issue 35, item 6: a date-time whose `T` is not followed by hours made
    /// the TOML library assert, so `--check-config` exited 134 and a reload
    /// killed the daemon.
    @Test("a date-time typo in depot.toml is a configuration error, at --check-config and on SIGHUP")
    func dateTimeTypo() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let base = DaemonProcess.config()
        let typos = ["2026-11-26T:10:00", "2026-11-26TT07:00:00", "2026-11-26T-10:00", "2026-11-26Ta7:32:00Z"]
        let file = folder.appendingPathComponent("depot.toml")
        for typo in typos {
            try Data(base.replacingOccurrences(of: "[daemon]\n", with: "[daemon]\nx = \(typo)\n").utf8).write(to: file)
            let (status, said) = try DaemonProcess.checkConfig(file.path)
            #expect(status == 78, "\(typo): exit \(status), \(said)")
            #expect(said.contains("line 2, column 16: not valid TOML: a date-time needs a time"), "\(typo): \(said)")
        }
        try Data(base.utf8).write(to: file)
        let d = try DaemonProcess(folder: folder)
        defer { d.stop() }
        for (n, typo) in typos.enumerated() {
            try Data(base.replacingOccurrences(of: "[daemon]\n", with: "[daemon]\nx = \(typo)\n").utf8).write(to: file)
            kill(d.process.processIdentifier, SIGHUP)
            #expect(d.notify.waitFor(prefix: "READY=1", count: n + 2, timeout: 30) != nil, "\(typo)")
            healthy(d, "a reload of \(typo)")
        }
        #expect(d.log.contains("a date-time needs a time"))
        #expect(d.stop() == 0)
    }
}
