import Foundation
import Testing

/// Issue 35, items 5, 7 and 12: the daemon reads only regular files, never
/// through a link that leaves the import roots, never a file its client
/// could not read, never waits on a FIFO or a device, and fails an import
/// whose file changes under it.
@Suite("depotd: the files it reads", .serialized, .timeLimit(.minutes(3)))
struct FileSafetyTests {
    static func importBody(_ path: String) -> String {
        "{\"kind\":\"import\",\"store\":\"travel\",\"entity\":\"Trip\",\"path\":\"\(path)\"}"
    }

    @Test(
        "a link that leaves the import roots, a dangling link, a file the client cannot read: refused with 403",
        .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func links() throws {
        let d = try DaemonProcess(
            config: DaemonProcess.config(
                socketMode: "0666",
                extra: """
                    [access]
                    write = ["uid:65534"]
                    """))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let inbox = d.folder.appendingPathComponent("inbox")
        let secret = d.folder.appendingPathComponent("secret.csv")
        try Data(tripsCSV(3, prefix: "s").utf8).write(to: secret)
        chmod(secret.path, 0o600)
        let open = inbox.appendingPathComponent("open.csv")
        try Data(tripsCSV(4, prefix: "o").utf8).write(to: open)
        chmod(open.path, 0o644)
        let closed = inbox.appendingPathComponent("closed.csv")
        try Data(tripsCSV(5, prefix: "c").utf8).write(to: closed)
        chmod(closed.path, 0o600)
        #expect(symlink(secret.path, inbox.appendingPathComponent("link.csv").path) == 0)
        #expect(symlink(open.path, inbox.appendingPathComponent("alias.csv").path) == 0)
        #expect(symlink("/nonexistent/x.csv", inbox.appendingPathComponent("dangling.csv").path) == 0)

        // The issue's case: uid 65534 cannot read secret.csv, links it in.
        let linked = try UnixHTTP.asUser(
            65534, d.socket, "POST", "/v1/jobs", body: Self.importBody(inbox.path + "/link.csv"))
        #expect(linked.hasPrefix("HTTP/1.1 403"), "\(linked)")
        #expect(linked.contains("is not under an import root") && linked.contains("it leads to \(secret.path)"))
        let dangling = try UnixHTTP.asUser(
            65534, d.socket, "POST", "/v1/jobs", body: Self.importBody(inbox.path + "/dangling.csv"))
        #expect(dangling.hasPrefix("HTTP/1.1 403") && dangling.contains("a symbolic link to nothing"), "\(dangling)")
        // A file inside a root that the client cannot read itself.
        let unreadable = try UnixHTTP.asUser(65534, d.socket, "POST", "/v1/jobs", body: Self.importBody(closed.path))
        #expect(
            unreadable.hasPrefix("HTTP/1.1 403") && unreadable.contains("cannot be read by uid 65534"), "\(unreadable)")
        // Root reads it; a link that stays inside the roots is followed.
        #expect(try ChangeFeedTests.job(d, Self.importBody(closed.path))["inserted"] as? Int == 5)
        let alias = try UnixHTTP.asUser(
            65534, d.socket, "POST", "/v1/jobs", body: Self.importBody(inbox.path + "/alias.csv"))
        #expect(alias.hasPrefix("HTTP/1.1 202"), "\(alias)")
        let id = json(String(alias[alias.range(of: "\r\n\r\n")!.upperBound...]))["id"] as? String ?? ""
        let ended = try d.jobEnded(id)
        #expect(ended["inserted"] as? Int == 4 && ended["path"] as? String == open.path)
        // Nothing of secret.csv was read.
        let count = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#)
        #expect(count.object["count"] as? Int == 9)
    }

    @Test(
        "a FIFO, a link to /dev/zero and a link out of a watched folder fail at once; later files import; a restart serves"
    )
    func watchedSpecialFiles() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: WatchReloadTests.watch))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let inbox = d.folder.appendingPathComponent("inbox/trips")
        let outside = d.folder.appendingPathComponent("outside.csv")
        try Data(tripsCSV(2, prefix: "x").utf8).write(to: outside)
        // Made aside and renamed in, as writers are told to (IN_MOVED_TO).
        let spare = d.folder.appendingPathComponent("inbox")
        #expect(mkfifo(spare.appendingPathComponent(".pipe").path, 0o644) == 0)
        #expect(symlink("/dev/zero", spare.appendingPathComponent(".zero").path) == 0)
        #expect(symlink(outside.path, spare.appendingPathComponent(".out").path) == 0)
        for (from, to) in [(".pipe", "pipe.csv"), (".zero", "zero.csv"), (".out", "out.csv")] {
            #expect(rename(spare.appendingPathComponent(from).path, inbox.appendingPathComponent(to).path) == 0)
        }
        // Considered in the order of their events: when this one's job ends,
        // the three before it were dealt with.
        let aside = d.folder.appendingPathComponent("inbox/.good.csv")
        try Data(tripsCSV(7).utf8).write(to: aside)
        #expect(rename(aside.path, inbox.appendingPathComponent("good.csv").path) == 0)
        #expect(try watchJobEnded(d, file: "good.csv")["inserted"] as? Int == 7)
        for (name, reason) in [
            ("pipe.csv", "not a regular file"), ("zero.csv", "symbolic link"), ("out.csv", "symbolic link")
        ] {
            let error = try? String(
                contentsOf: inbox.appendingPathComponent(".failed/\(name).error.json"), encoding: .utf8)
            #expect(error?.contains(reason) == true, "\(name): \(error ?? "no error file")")
        }
        #expect(try d.request("GET", "/v1/watches").status == 200)
        #expect(d.stop() == 0)

        // Files found at start are scanned before the socket serves: a FIFO
        // there kept the daemon from ever serving.
        #expect(mkfifo(inbox.appendingPathComponent("late.csv").path, 0o644) == 0)
        let again = try DaemonProcess(folder: d.folder)
        defer { again.stop() }
        #expect(try again.request("GET", "/v1/health").status == 200)
        #expect(
            FileManager.default.fileExists(atPath: inbox.appendingPathComponent(".failed/late.csv.error.json").path))
    }

    /// `bytes` (a path that need not be UTF-8) as a C string for `body`.
    static func withPath<T>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> T) -> T {
        (bytes + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) } }
    }

    @Test("a watched file whose name is not UTF-8 goes to .failed/ under its own name, with its reason")
    func nonUTF8Name() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: WatchReloadTests.watch))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let inbox = d.folder.appendingPathComponent("inbox/trips")
        let name: [UInt8] = Array("trips-".utf8) + [0xFF, 0xFE] + Array(".csv".utf8)
        let aside = Array(d.folder.appendingPathComponent("inbox").path.utf8) + [0x2F, 0x2E] + name
        let fd = Self.withPath(aside) { open($0, O_WRONLY | O_CREAT, 0o644) }
        #expect(fd >= 0)
        _ = tripsCSV(3).utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
        let target = Array(inbox.path.utf8) + [0x2F] + name
        #expect(Self.withPath(aside) { a in Self.withPath(target) { rename(a, $0) } } == 0)
        // Considered in the order of their events: when this one's job
        // ends, the one before was dealt with.
        let good = d.folder.appendingPathComponent("inbox/.good.csv")
        try Data(tripsCSV(2, prefix: "g").utf8).write(to: good)
        #expect(rename(good.path, inbox.appendingPathComponent("good.csv").path) == 0)
        #expect(try watchJobEnded(d, file: "good.csv")["inserted"] as? Int == 2)
        let failed = Array(inbox.path.utf8) + Array("/.failed/".utf8) + name
        #expect(Self.withPath(failed) { access($0, F_OK) } == 0, "not moved to .failed/")
        let reason = Self.withPath(failed + Array(".error.json".utf8)) { p -> String in
            let fd = open(p, O_RDONLY)
            guard fd >= 0 else { return "" }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            return String(decoding: buffer.prefix(max(0, n)), as: UTF8.self)
        }
        #expect(reason.contains("the file's name is not UTF-8"), "\(reason)")
        #expect(d.log.contains("a watched file's name is not UTF-8"))
    }

    @Test("a file truncated while it is imported fails the job saying so, and leaves no empty rejects file")
    func changedDuringImport() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(saveEvery: 2_000))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let file = d.folder.appendingPathComponent("inbox/big.csv")
        let text = tripsCSV(200_000)
        try Data(text.utf8).write(to: file)
        let accepted = try d.request("POST", "/v1/jobs", body: Self.importBody(file.path))
        let id = accepted.object["id"] as? String ?? ""
        _ = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") { line in
            guard (json(line)["saves"] as? Int ?? 0) >= 1 else { return false }
            #expect(truncate(file.path, off_t(text.utf8.count / 3)) == 0)
            return true
        }
        let ended = try d.jobEnded(id)
        #expect(ended["state"] as? String == "failed")
        #expect((ended["error"] as? String ?? "").contains("the file changed while it was imported"), "\(ended)")
        let jobs = d.folder.appendingPathComponent("state/jobs")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: jobs.path)) ?? []
        #expect(!left.contains { $0.hasPrefix(id) && $0.hasSuffix(".rejects.ndjson") }, "\(left)")
    }
}
