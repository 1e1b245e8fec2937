import ChildProcessSupport
import Foundation
import Synchronization
import Testing

/// `POST .../export` (issue 13, reads at scale): records streamed from one
/// snapshot, the count in a trailer, errors as statuses, a hang-up ends it.
@Suite("depotd streamed export", .serialized)
struct ExportStreamTests {
    static let path = "/v1/stores/travel/entities/Trip/export"

    func job(_ d: DaemonProcess, _ body: String) throws -> [String: Any] {
        try ChangeFeedTests.job(d, body)
    }

    @Test("a streamed export writes what an export job writes, with the count in its trailer")
    func sameAsJob() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(2_000), name: "trips.csv")
        for (format, predicate) in [("csv", nil), ("ndjson", nil), ("csv", "budget > 500"), ("ndjson", "id == 'none'")]
        {
            var body = "{\"format\":\"\(format)\""
            var spec = "{\"kind\":\"export\",\"store\":\"travel\",\"entity\":\"Trip\",\"format\":\"\(format)\""
            if let predicate {
                body += ",\"where\":\"\(predicate)\""
                spec += ",\"where\":\"\(predicate)\""
            }
            let streamed = try d.request("POST", Self.path, body: body + "}")
            #expect(streamed.status == 200)
            #expect(
                streamed.headers["content-type"]?.hasPrefix(format == "csv" ? "text/csv" : "application/x-ndjson")
                    == true)
            let record = try job(d, spec + "}")
            let file = try String(contentsOfFile: record["path"] as? String ?? "", encoding: .utf8)
            #expect(streamed.body == file, "\(format) \(predicate ?? "")")
            #expect(Self.trailer(streamed) == record["exported"] as? Int)
        }
        #expect(Self.trailer(try d.request("POST", Self.path, body: "{}")) == 2_000)
    }

    /// The `Depot-Records` trailer, after the last chunk.
    static func trailer(_ r: HTTPResult) -> Int? {
        r.trailers["depot-records"].flatMap { Int($0) }
    }

    @Test("a bad request is a status with the reason, before anything streams")
    func errorsAreStatuses() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let bad = try d.request("POST", Self.path, body: #"{"where":"budget >"}"#)
        #expect(bad.status == 400 && ChangeFeedTests.code(bad) == "invalid_predicate")
        let format = try d.request("POST", Self.path, body: #"{"format":"xml"}"#)
        #expect(format.status == 400 && format.body.contains("csv or ndjson"))
        let prefetch = try d.request("POST", Self.path, body: #"{"prefetch":["x"]}"#)
        #expect(prefetch.status == 400 && prefetch.body.contains("export job"))
        let entity = try d.request("POST", "/v1/stores/travel/entities/Trips/export", body: "{}")
        #expect(entity.status == 404 && entity.body.contains("Trip"))
    }

    @Test("a client that hangs up mid-export ends the read; the daemon goes on serving")
    func hangUp() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // Far more than the pipe's few chunks and the socket's buffers hold.
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(150_000), name: "many.csv")
        // The answer has begun: its head and some records.
        let fd = try Self.post(d, Self.path, #"{"format":"ndjson"}"#, reading: 100_000)
        try d.waitForStreams(1)
        close(fd)
        try d.waitForStreams(0)
        #expect(Self.trailer(try d.request("POST", Self.path, body: #"{"where":"id == 't7'"}"#)) == 1)

        // Duplicates stream out too: an answer of several chunks, whole.
        let path = "/v1/stores/travel/entities/Trip/duplicates"
        let groups = try d.request("POST", path, body: #"{"by":["destination"]}"#)
        #expect(groups.status == 200)
        let list = groups.object["groups"] as? [[String: Any]] ?? []
        #expect(list.map { ($0["values"] as? [String])?.first } == (0..<9).map { "City \($0)" })
        #expect(list.reduce(0) { $0 + (($1["identifiers"] as? [String])?.count ?? 0) } == 150_000)
        #expect(Set(list.flatMap { $0["identifiers"] as? [String] ?? [] }).count == 150_000)
        // Its request errors are statuses, before anything streams.
        for (body, code) in [
            (#"{"by":["nope"]}"#, "unknown_field"), (#"{"by":[]}"#, "invalid_argument"),
            (#"{"by":["name"],"limit":-1}"#, "invalid_argument"),
            (#"{"by":["name"],"where":"budget >"}"#, "invalid_predicate")
        ] {
            let r = try d.request("POST", path, body: body)
            #expect(r.status == 400 && ChangeFeedTests.code(r) == code, "\(body): \(r.body)")
        }
    }

    /// Sends an export request on a connection of its own and reads nothing.
    static func unreadExport(_ d: DaemonProcess) throws -> Int32 {
        try post(d, path, #"{"format":"ndjson"}"#, reading: 0)
    }

    /// Sends a POST of `body` to `target` on a connection of its own, then
    /// reads at least `reading` bytes of the answer (fewer only if it ends);
    /// the connection, still open.
    static func post(_ d: DaemonProcess, _ target: String, _ body: String, reading: Int) throws -> Int32 {
        let fd = try UnixHTTP.connect(d.socket)
        UnixHTTP.send(
            fd,
            Data(
                ("POST \(target) HTTP/1.1\r\nHost: depot\r\nConnection: close\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var received = 0
        while received < reading {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            received += n
        }
        #expect(received >= reading)
        return fd
    }

    /// The `depot_streams_timed_out_total` counter of `/v1/metrics`.
    static func timedOut(_ d: DaemonProcess) throws -> Int? { try d.metric("depot_streams_timed_out_total") }

    /// Issue 35, items 1 and 2: an export read by nobody and then hung up on
    /// killed depotd (a semaphore freed below its first value); exports
    /// read by nobody held every reader connection, so that no fetch, count
    /// or history page was answered while they stayed connected.
    @Test("exports that nobody reads hold no reader, end at their write deadline, and a hang-up kills nothing")
    func unreadExports() throws {
        let config = DaemonProcess.config().replacingOccurrences(
            of: "[daemon]\n", with: "[daemon]\nstream_write_timeout = \"5s\"\n")
        let d = try DaemonProcess(config: config)
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // Far more than the pipe's few chunks and the socket's buffers hold.
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(100_000), name: "many.csv")

        // Hung up on without reading a byte: the daemon lives on.
        for _ in 0..<3 {
            let fd = try Self.unreadExport(d)
            try d.waitForStreams(1)
            close(fd)
            try d.waitForStreams(0)
            #expect(Self.trailer(try d.request("POST", Self.path, body: #"{"where":"id == 't7'"}"#)) == 1)
            #expect(d.process.isRunning)
        }

        // Ten exports (more than the eight readers) that nobody reads.
        let unread = try (0..<10).map { _ in try Self.unreadExport(d) }
        defer { unread.forEach { close($0) } }
        try d.waitForStreams(10)
        let count = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#)
        #expect(count.object["count"] as? Int == 100_000)
        let fetch = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"where":"id == 't9'"}"#)
        #expect((fetch.object["records"] as? [[String: Any]])?.count == 1)
        let history = try d.request("GET", "/v1/stores/travel/history?limit=1")
        #expect(history.status == 200)
        // Answered while all ten were still open, not after they ended.
        #expect(try d.streamsOpen() == 10)
        // Then each ends at its write deadline, counted, and the daemon serves on.
        try d.waitForStreams(0)
        #expect(try Self.timedOut(d) == 10)
        #expect(d.log.contains("read nothing of a streamed answer"))
        #expect(Self.trailer(try d.request("POST", Self.path, body: #"{"where":"id == 't7'"}"#)) == 1)
        #expect(d.stop() == 0)
    }

    @Test(
        "depotd stopped while a client reads nothing of an export stops the export, and leaves its store whole in the file"
    )
    func stopDuringUnreadExport() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(50_000), name: "many.csv")
        // Its read holds a connection of its own (and its snapshot) until
        // its write deadline, 30 s.
        let fd = try Self.unreadExport(d)
        defer { close(fd) }
        try d.waitForStreams(1)
        // A save after the export's snapshot.
        let late = try SaveTests.save(d, #"{"changes":[{"insert":"Trip","record":\#(SaveTests.trip("late"))}]}"#)
        #expect(late.status == 200, "\(late.body)")
        #expect(d.stop() == 0)
        let alone = try d.storeFileAlone("SELECT count(*), count(*) FILTER (WHERE id = 'late') FROM Trip")
        #expect(alone.leftBeside.isEmpty, "\(alone.leftBeside)")
        #expect(alone.answer == "50001|1\n")
    }

    /// depotd's resident memory, in MiB.
    static func rss(_ d: DaemonProcess) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(d.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }

    /// Issue 35, item 8: a fetch without a limit was built whole in memory,
    /// twice: 20 of 100k records took 559 MB. Here ten answers of 200k
    /// records held took 280 MiB before, 60 now.
    @Test(
        "fetches without a limit stream: ten held by clients that stopped reading stay within 150 MiB; one read whole is exact"
    )
    func unboundedFetches() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(200_000), name: "many.csv")
        let fetch = "/v1/stores/travel/entities/Trip/fetch"
        // Whole: every record, in order, one JSON document.
        let whole = try d.request("POST", fetch, body: #"{"sort":["-budget","id"]}"#)
        let records = whole.object["records"] as? [[String: Any]] ?? []
        #expect(records.count == 200_000)
        #expect(records.first?["budget"] as? Double == 999.5 && records.last?["budget"] as? Double == 0.5)
        // A page in memory and the same records streamed agree.
        let paged =
            try d.request("POST", fetch, body: #"{"sort":["id"],"limit":10000,"offset":3}"#).object["records"]
            as? [[String: Any]]
        let streamed =
            try d.request("POST", fetch, body: #"{"sort":["id"],"limit":20000,"offset":3}"#).object["records"]
            as? [[String: Any]]
        #expect(paged?.map { $0["id"] as? String } == streamed?.prefix(10_000).map { $0["id"] as? String })
        let idle = Self.rss(d)
        // Ten clients that read the first bytes of every record, then stop.
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        for _ in 0..<10 { held.append(try Self.post(d, fetch, "{}", reading: 65_536)) }
        let holding = Self.rss(d)
        #expect(holding - idle < 150, "idle \(idle) MiB, holding ten answers \(holding) MiB")
        #expect(try d.request("GET", "/v1/health").status == 200)
    }

    /// Issue 51: ten concurrent downloads of an 83 MB rejects file took the
    /// daemon from 107 to 238 MB, not given back.
    @Test(
        "ten concurrent downloads of a large rejects file: each whole, and the memory goes back once they end; a failed job's rejects download too"
    )
    func rejectsDownloadsGiveMemoryBack() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // Every row rejected (its budget is not a number): a rejects file of about 30 MB.
        var text = "id,name,destination,startDate,budget,isFavorite\n"
        let pad = String(repeating: "x", count: 60)
        for i in 0..<200_000 {
            text += "r\(i),Trip \(i),City,2025-03-10," + (i % 50 == 0 ? "1" : "not a number \(pad)") + ",true\n"
        }
        let file = d.folder.appendingPathComponent("inbox/bad.csv")
        try Data(text.utf8).write(to: file)
        let accepted = try d.request(
            "POST", "/v1/jobs",
            body: #"{"kind":"import","store":"travel","entity":"Trip","path":"\#(file.path)","max_rejects":"100%"}"#)
        let id = accepted.object["id"] as? String ?? ""
        let last = try d.jobEnded(id)
        #expect(last["rejected"] as? Int == 196_000, "\(last)")
        let first = try UnixHTTP.request(socket: d.socket, method: "GET", path: "/v1/jobs/\(id)/rejects")
        let size = first.body.utf8.count
        #expect(size > 25_000_000, "\(first.status) \(first.headers) \(first.body.prefix(300)) \(last)")
        let before = Self.rss(d)
        let sizes = Mutex<[Int]>([])
        let socket = d.socket
        DispatchQueue.concurrentPerform(iterations: 10) { _ in
            let got =
                (try? UnixHTTP.request(socket: socket, method: "GET", path: "/v1/jobs/\(id)/rejects"))?.body.utf8.count
                ?? 0
            sizes.withLock { $0.append(got) }
        }
        #expect(sizes.withLock { $0 }.allSatisfy { $0 == size }, "\(sizes.withLock { $0 }) of \(size)")
        // The memory the downloads held goes back (waited for, up to 10 s).
        // The bound leaves 24 MiB to the allocator of a loaded machine
        // (+14 MiB seen beside the whole suite); the defect held 131 MiB.
        let bound = before + before / 10 + 24
        let deadline = ContinuousClock.now + .seconds(10)
        var after = Self.rss(d)
        while after > bound, ContinuousClock.now < deadline {
            _ = try d.request("GET", "/v1/health")
            after = Self.rss(d)
        }
        print("rejects downloads: before \(before) MiB, after \(after) MiB")
        #expect(after <= bound, "before \(before) MiB, after ten downloads \(after) MiB")
        // A job whose every row was refused fails saying "see the rejects
        // file": its rejects download whole all the same.
        let all = d.folder.appendingPathComponent("inbox/all-bad.csv")
        try Data(
            "id,name,destination,startDate,budget,isFavorite\na,n,c,2025-01-01,x,true\nb,n,c,2025-01-01,y,true\n".utf8
        )
        .write(to: all)
        let failing = try d.request(
            "POST", "/v1/jobs", body: #"{"kind":"import","store":"travel","entity":"Trip","path":"\#(all.path)"}"#)
        let failed = try d.jobEnded(failing.object["id"] as? String ?? "")
        #expect(failed["state"] as? String == "failed" && (failed["error"] as? String)?.contains("rejects") == true)
        let lines = try UnixHTTP.request(
            socket: d.socket, method: "GET", path: "/v1/jobs/\(failing.object["id"] as? String ?? "")/rejects"
        ).body.split(separator: "\n")
        #expect(lines.count == 2 && lines.first?.contains(#""line":2"#) == true, "\(lines)")
    }

    /// Issue 51: after 1,000 live fetches closed, the daemon stayed 17% above
    /// where it was (93 → 109 MB).
    @Test("1,000 live fetches with distinct filters, opened and closed: the daemon's memory goes back within 10%")
    func liveFetchesGiveMemoryBack() throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(5_000), name: "some.csv")
        let fetch = "/v1/stores/travel/entities/Trip/fetch"
        func round(_ count: Int, _ comparison: String) throws {
            // Held by a child process: a thousand sockets in the test process
            // itself took it past a thousand descriptors, where Foundation's
            // Process.run (of any test running meanwhile) can crash
            // (swift-corelibs-foundation #5472).
            let holder = try StreamHolder(socket: d.socket, target: fetch, comparison: comparison, count: count)
            defer { holder.release() }
            #expect(holder.held == count)
            // Each stream counted once the daemon has registered it.
            let deadline = ContinuousClock.now + .seconds(30)
            while try d.streamsOpen() != count, ContinuousClock.now < deadline {}
            #expect(try d.streamsOpen() == count)
        }
        func settled() throws {
            // Every stream ended (waited for, up to 30 s).
            let deadline = ContinuousClock.now + .seconds(30)
            while try d.streamsOpen() != 0, ContinuousClock.now < deadline {}
            #expect(try d.streamsOpen() == 0)
        }
        // A first round of 100, of other filters, takes what stays (the
        // runtime's pools, the allocator's arenas).
        try round(100, "<")
        try settled()
        let before = Self.rss(d)
        try round(1_000, ">")
        try settled()
        // Within 10%, and 24 MiB for the allocator of a loaded machine (the
        // shared results kept before the fix were 70 MiB here).
        let bound = before + before / 10 + 24
        let deadline = ContinuousClock.now + .seconds(10)
        var after = Self.rss(d)
        while after > bound, ContinuousClock.now < deadline { after = Self.rss(d) }
        print("1,000 live fetches: before \(before) MiB, after \(after) MiB")
        #expect(after <= bound, "before \(before) MiB, after 1,000 live fetches closed \(after) MiB")
    }

}

/// `count` live fetches (`budget COMPARISON k`, k counting up to 999) held
/// open by a Python child until ``release()``: each has had its first bytes.
final class StreamHolder {
    let process = Process()
    private let input = Pipe()
    private(set) var held = 0

    init(socket: String, target: String, comparison: String, count: Int) throws {
        let script = """
            import resource, socket, sys
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            path, target, cmp, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
            held = []
            for k in range(count):
                body = ('{"where":"budget %s %d","fields":["id","budget"],"watch":true,"changes":true}' % (cmp, k % 1000)).encode()
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                s.sendall(("POST %s HTTP/1.1\\r\\nHost: depot\\r\\nConnection: close\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n" % (target, len(body))).encode() + body)
                if not s.recv(65536):
                    break
                held.append(s)
            print("held", len(held), flush=True)
            sys.stdin.read()
            """
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, socket, target, comparison, String(count)]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.runClosingFiles()
        // One line ("held N"); the child keeps its output open until released.
        var said = Data()
        while !said.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said.append(chunk)
        }
        let line = String(decoding: said, as: UTF8.self)
        held = Int(line.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? -1
    }

    /// Ends the child: every stream it held closes.
    func release() {
        try? input.fileHandleForWriting.close()
        process.waitForExit()
    }
}
