import DepotDaemon
import DepotEngine
import DepotWire
import Foundation
import Testing

/// The daemon's side of the console (DESIGN §19, issue #34): its files on
/// the socket, who the daemon sees (`/v1/me`), a record's history and the
/// figures of the charts. The console itself, with the bridge, runs in a
/// real browser: Tests/Console/console_test.py (scripts/console-test).
@Suite("depotd: the console's files, /v1/me, a record's history, /v1/figures", .serialized)
struct ConsoleTests {
    @Test("/console/ names each file by its hash; that name is kept for good, the page revalidated; 304, 404, 308")
    func files() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let index = try d.request("GET", "/console/")
        #expect(index.status == 200)
        #expect(index.headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(index.headers["cache-control"] == "no-cache")
        #expect(index.headers["content-security-policy"]?.contains("default-src 'self'") == true)
        let script = try #require(
            index.body.firstMatch(of: /src="(app\.[0-9a-f]{12}\.js)"/).map { String($0.1) }, "\(index.body)")
        let hashed = try d.request("GET", "/console/" + script)
        #expect(hashed.status == 200)
        #expect(hashed.headers["cache-control"]?.contains("immutable") == true)
        #expect(hashed.headers["content-type"]?.hasPrefix("text/javascript") == true)
        let plain = try d.request("GET", "/console/app.js")
        #expect(plain.body == hashed.body && plain.headers["cache-control"] == "no-cache")
        let again = try d.request("GET", "/console/" + script, headers: ["If-None-Match": hashed.headers["etag"] ?? ""])
        #expect(again.status == 304 && again.body.isEmpty)
        let gzip = try d.request("GET", "/console/" + script, headers: ["Accept-Encoding": "gzip, br"])
        #expect(gzip.headers["content-encoding"] == "gzip")
        #expect(Int(gzip.headers["content-length"] ?? "") ?? .max < hashed.body.utf8.count / 2)
        let missing = try d.request("GET", "/console/nothing.js")
        #expect(missing.status == 404)
        #expect(
            (missing.object["error"] as? [String: Any])?["message"] as? String == "the console has no file nothing.js")
        let bare = try d.request("GET", "/console")
        #expect(bare.status == 308 && bare.headers["location"] == "/console/")
    }

    @Test("/v1/me: the daemon's own user writes; a read principal reads", .enabled(if: getuid() == 0))
    func me() throws {
        let d = try DaemonProcess(
            config: DaemonProcess.config(socketMode: "0666", extra: "[access]\nread = [\"uid:65533\"]\n"))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let own = try d.request("GET", "/v1/me").object
        #expect(own["uid"] as? Int == 0 && own["user"] as? String == "root" && own["role"] as? String == "write")
        let reader = try UnixHTTP.asUser(65533, d.socket, "GET", "/v1/me")
        #expect(reader.contains(#""role":"read""#) && reader.contains(#""uid":65533"#), "\(reader)")
        let page = try UnixHTTP.asUser(65533, d.socket, "GET", "/console/")
        #expect(page.hasPrefix("HTTP/1.1 200"), "a reader may load the console: \(page.prefix(80))")
    }

    @Test("a record's history over the API: old → new, `limit` keeps the newest, 404 for a missing entity")
    func recordHistory() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let path = "/v1/stores/travel/entities/Trip/records/"
        #expect(try d.request("PUT", path + "T1", body: RecordTests.trip("T1")).status == 200)
        #expect(try d.request("PUT", path + "T2", body: RecordTests.trip("T2")).status == 200)
        #expect(try d.request("PATCH", path + "T1", body: #"{"budget": 950}"#).status == 200)
        let all = try d.request("GET", path + "T1/history")
        #expect(all.status == 200)
        let transactions = try #require(all.object["transactions"] as? [[String: Any]])
        #expect(transactions.map { $0["token"] as? String } == ["1", "3"])
        let kinds = transactions.flatMap { ($0["changes"] as? [[String: Any]] ?? []).map { $0["kind"] as? String } }
        #expect(kinds == ["insert", "update"])
        let newest = try d.request("GET", path + "T1/history?limit=1").object["transactions"] as? [[String: Any]]
        #expect(newest?.map { $0["token"] as? String } == ["3"])
        let none = try d.request("GET", path + "T9/history").object["transactions"] as? [[String: Any]]
        #expect(none?.isEmpty == true)
        #expect(try d.request("GET", "/v1/stores/travel/entities/Nope/records/x/history").status == 404)
        #expect(try d.request("GET", path + "T1/history?limit=0").status == 400)
    }

    @Test("GET /v1/stores counts each entity's records again after each commit (the counts are kept until one)")
    func counts() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        func count(_ entity: String) throws -> Int? {
            let stores = try d.request("GET", "/v1/stores").object["stores"] as? [[String: Any]]
            let entities = stores?.first?["entities"] as? [[String: Any]]
            return entities?.first { $0["name"] as? String == entity }?["count"] as? Int
        }
        let path = "/v1/stores/travel/entities/Trip/records/"
        #expect(try count("Trip") == 0)
        #expect(try d.request("PUT", path + "T1", body: RecordTests.trip("T1")).status == 200)
        #expect(try count("Trip") == 1)
        #expect(try count("Trip") == 1)
        #expect(try d.request("PUT", path + "T2", body: RecordTests.trip("T2")).status == 200)
        #expect(try count("Trip") == 2)
        #expect(try d.request("DELETE", path + "T1").status == 200)
        #expect(try count("Trip") == 1)
        // An entity made over the API, and its first record.
        let body = #"{"identifier": "code", "fields": {"code": "string"}}"#
        #expect(try d.request("PUT", "/v1/stores/travel/entities/Codes", body: body).status == 201)
        #expect(try count("Codes") == 0)
        #expect(
            try d.request("PUT", "/v1/stores/travel/entities/Codes/records/a", body: #"{"code":"a"}"#).status == 200)
        #expect(try count("Codes") == 1 && count("Trip") == 1)
    }

    @Test("the figures: a point is the growth of the totals since the last one; an hour of points is kept")
    func figures() throws {
        let metrics = Metrics()
        let figures = metrics.figures
        figures.sample(metrics, consumerLag: nil)
        #expect(figures.all.samples.isEmpty, "the first call only starts the count")
        var progress = ImportProgress()
        progress.counters.read = 500
        progress.counters.saves = 1
        progress.lastSaveSeconds = 0.25
        metrics.importProgressed(job: "j1", progress)
        metrics.saveAnswered(seconds: 0.002)
        metrics.saveAnswered(seconds: 0.004)
        figures.sample(metrics, consumerLag: 7)
        let point = try #require(figures.all.samples.last)
        #expect(point.rowsPerSecond > 0)
        #expect(point.saves == 2)
        #expect(abs((point.saveMilliseconds ?? 0) - 3) < 0.001)
        #expect(abs((point.importSaveMilliseconds ?? 0) - 250) < 0.001)
        #expect(point.consumerLag == 7)
        figures.sample(metrics, consumerLag: nil)
        let idle = figures.all.samples.last
        #expect(idle?.rowsPerSecond == 0 && idle?.saveMilliseconds == nil && idle?.saves == 0)
        for _ in 0..<400 { figures.sample(metrics, consumerLag: nil) }
        #expect(figures.all.samples.count == 360)
        #expect(figures.all.interval == 10)
    }
}
