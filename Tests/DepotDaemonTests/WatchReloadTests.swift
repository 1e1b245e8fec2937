import Foundation
import Testing

/// The events of `/v1/events` until the job for `file` in a watched folder
/// ends; returns its last record.
/// It may have ended before the stream opened: the job list is read once
/// the stream is subscribed, so no ending slips between the two.
func watchJobEnded(_ d: DaemonProcess, file: String) throws -> [String: Any] {
    func ended(_ job: [String: Any]) -> Bool {
        (job["watch_file"] as? String)?.hasSuffix("/" + file) == true
            && ["succeeded", "failed", "cancelled"].contains(job["state"] as? String ?? "")
    }
    var last: [String: Any] = [:]
    _ = try UnixHTTP.stream(
        socket: d.socket, path: "/v1/events",
        opened: {
            guard let job = try jobList(d).first(where: ended) else { return false }
            last = job
            return true
        }
    ) { line in
        let job = json(line)["job"] as? [String: Any] ?? [:]
        guard ended(job) else { return false }
        last = job
        return true
    }
    return last
}

/// The jobs the daemon knows, as their records.
func jobList(_ d: DaemonProcess) throws -> [[String: Any]] {
    try d.request("GET", "/v1/jobs").object["jobs"] as? [[String: Any]] ?? []
}

@Suite("depotd watched folders and reload", .serialized)
struct WatchReloadTests {
    static let watch = """
        [[watch]]
        path = "inbox/trips"
        store = "travel"
        entity = "Trip"
        """

    @Test("a file written in place is imported once it is closed, whole, not while it is being written")
    func writeInPlace() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: Self.watch))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let inbox = d.folder.appendingPathComponent("inbox/trips")
        let path = inbox.appendingPathComponent("slow.csv").path
        let text = Array(tripsCSV(60, prefix: "w").utf8)
        // O_CLOEXEC: a daemon another test starts meanwhile must not inherit the
        // descriptor, or the file stays open (no IN_CLOSE_WRITE) while that daemon runs.
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        let half = text.count / 2
        #expect(text.withUnsafeBytes { write(fd, $0.baseAddress, half) } == half)
        // Another file renamed in afterwards: once its job ended, the
        // watcher has read the events that came before, slow.csv's included.
        let other = inbox.appendingPathComponent(".other.csv.part")
        try Data(tripsCSV(3, prefix: "o").utf8).write(to: other)
        #expect(rename(other.path, inbox.appendingPathComponent("other.csv").path) == 0)
        #expect(try watchJobEnded(d, file: "other.csv")["state"] as? String == "succeeded")
        #expect(try jobList(d).contains { ($0["watch_file"] as? String)?.hasSuffix("/slow.csv") == true } == false)
        // The rest of the file, then close: now it is imported, whole.
        #expect(text.withUnsafeBytes { write(fd, $0.baseAddress! + half, text.count - half) } == text.count - half)
        close(fd)
        let job = try watchJobEnded(d, file: "slow.csv")
        #expect(job["state"] as? String == "succeeded")
        #expect(job["inserted"] as? Int == 60)
        #expect(job["rejected"] as? Int == 0)
        #expect(FileManager.default.fileExists(atPath: inbox.appendingPathComponent(".done/slow.csv").path))
    }

    @Test("an imported file that cannot leave its folder is reported and never imported again, in this run or the next")
    func strandedFile() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: Self.watch))
        defer { try? FileManager.default.removeItem(at: d.folder) }
        let inbox = d.folder.appendingPathComponent("inbox/trips")
        // .done is a file, not a folder: the rename fails (ENOTDIR), as root too.
        try FileManager.default.removeItem(at: inbox.appendingPathComponent(".done"))
        try Data().write(to: inbox.appendingPathComponent(".done"))
        let stuck = inbox.appendingPathComponent("stuck.csv")
        try Data(tripsCSV(5, prefix: "s").utf8).write(to: stuck)
        #expect(try watchJobEnded(d, file: "stuck.csv")["state"] as? String == "succeeded")
        #expect(FileManager.default.fileExists(atPath: stuck.path))
        #expect(d.log.contains("a watched file cannot leave its folder"))
        // Written again (IN_CLOSE_WRITE); then another file, whose job ending
        // means the watcher read the event before it.
        try Data(tripsCSV(5, prefix: "s").utf8).write(to: stuck)
        try FileManager.default.removeItem(at: inbox.appendingPathComponent(".done"))
        try FileManager.default.createDirectory(
            at: inbox.appendingPathComponent(".done"), withIntermediateDirectories: false)
        try Data(tripsCSV(3, prefix: "n").utf8).write(to: inbox.appendingPathComponent("next.csv"))
        #expect(try watchJobEnded(d, file: "next.csv")["state"] as? String == "succeeded")
        func importsOfStuck() throws -> Int {
            try jobList(d).filter { ($0["watch_file"] as? String)?.hasSuffix("/stuck.csv") == true }.count
        }
        #expect(try importsOfStuck() == 1)
        #expect(d.stop() == 0)
        // The next start scans the folder: the content hash says it was
        // imported, so it moves to .done/ now, without a second job.
        let again = try DaemonProcess(folder: d.folder)
        defer { again.stop() }
        #expect(try jobList(again).filter { ($0["watch_file"] as? String)?.hasSuffix("/stuck.csv") == true }.count == 1)
        #expect(FileManager.default.fileExists(atPath: inbox.appendingPathComponent(".done/stuck.csv").path))
        #expect(!FileManager.default.fileExists(atPath: stuck.path))
        #expect(
            try again.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#).object[
                "count"] as? Int == 8)
    }

    @Test("files dropped while the daemon was down are imported at start; hidden and partial names are left alone")
    func droppedWhileDown() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let inbox = folder.appendingPathComponent("inbox/trips")
        try FileManager.default.createDirectory(at: inbox, withIntermediateDirectories: true)
        try Data(tripsCSV(40, prefix: "a").utf8).write(to: inbox.appendingPathComponent("early.csv"))
        try Data(tripsCSV(7, prefix: "b").utf8).write(to: inbox.appendingPathComponent("early.ndjson.part"))
        try Data(tripsCSV(7, prefix: "c").utf8).write(to: inbox.appendingPathComponent(".hidden.csv"))
        try Data(DaemonProcess.config(extra: Self.watch).utf8).write(to: folder.appendingPathComponent("depot.toml"))
        let d = try DaemonProcess(folder: folder)
        defer { d.stop() }
        // The start-up scan submits the job before the daemon is ready.
        let jobs = try jobList(d)
        #expect(jobs.count == 1)
        let id = jobs.first?["id"] as? String ?? ""
        let events = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") {
            ["succeeded", "failed"].contains(json($0)["state"] as? String ?? "")
        }
        #expect(json(events.last ?? "")["state"] as? String == "succeeded")
        #expect(json(events.last ?? "")["inserted"] as? Int == 40)
        #expect(FileManager.default.fileExists(atPath: inbox.appendingPathComponent(".done/early.csv").path))
        #expect(FileManager.default.fileExists(atPath: inbox.appendingPathComponent("early.ndjson.part").path))
        #expect(FileManager.default.fileExists(atPath: inbox.appendingPathComponent(".hidden.csv").path))
    }

    @Test("SIGHUP: a new store and a new watch start, a running import carries on, a broken file is refused whole")
    func reload() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let base = DaemonProcess.config(saveEvery: 2_000)
        try Data(base.utf8).write(to: folder.appendingPathComponent("depot.toml"))
        let d = try DaemonProcess(folder: folder)
        defer { d.stop() }
        let file = folder.appendingPathComponent("inbox/big.csv")
        try Data(tripsCSV(200_000).utf8).write(to: file)
        let accepted = try d.request(
            "POST", "/v1/jobs",
            body: "{\"kind\":\"import\",\"store\":\"travel\",\"entity\":\"Trip\",\"path\":\"\(file.path)\"}")
        let id = accepted.object["id"] as? String ?? ""
        _ = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") {
            (json($0)["saves"] as? Int ?? 0) >= 1
        }
        #expect(try d.request("GET", "/v1/stores/archive").status == 404)

        // A second store and a watch feeding it.
        let grown =
            base + """

                [[store]]
                name = "archive"

                  [[store.entity]]
                  name = "Trip"
                  identifier = "id"
                \(DaemonProcess.tripFields)

                [[watch]]
                path = "inbox/archive"
                store = "archive"
                entity = "Trip"
                """
        try Data(grown.utf8).write(to: folder.appendingPathComponent("depot.toml"))
        kill(d.process.processIdentifier, SIGHUP)
        #expect(d.notify.waitFor(prefix: "RELOADING=1", timeout: 30) != nil)
        #expect(d.notify.waitFor(prefix: "READY=1", count: 2, timeout: 30) != nil)
        #expect(try d.request("GET", "/v1/stores/archive").status == 200)
        let inbox = folder.appendingPathComponent("inbox/archive")
        #expect(FileManager.default.fileExists(atPath: inbox.path))
        let part = inbox.appendingPathComponent(".old.csv.part")
        try Data(tripsCSV(12, prefix: "x").utf8).write(to: part)
        #expect(rename(part.path, inbox.appendingPathComponent("old.csv").path) == 0)
        let archived = try watchJobEnded(d, file: "old.csv")
        #expect(archived["store"] as? String == "archive")
        #expect(archived["inserted"] as? Int == 12)

        // A broken file: refused whole, the daemon keeps what it runs.
        try Data((grown + "\n[daemon]\nsave_every = \"many\"\n").utf8).write(
            to: folder.appendingPathComponent("depot.toml"))
        kill(d.process.processIdentifier, SIGHUP)
        #expect(d.notify.waitFor(prefix: "READY=1", count: 3, timeout: 30) != nil)
        #expect(d.log.contains("configuration not reloaded"))
        #expect(try d.request("GET", "/v1/stores/archive").status == 200)

        // The import that ran through both reloads completes exactly.
        let events = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") {
            ["succeeded", "failed"].contains(json($0)["state"] as? String ?? "")
        }
        #expect(json(events.last ?? "")["state"] as? String == "succeeded")
        #expect(json(events.last ?? "")["inserted"] as? Int == 200_000)
        #expect(d.stop() == 0)
    }
}

/// Issue 35, item 10: SIGHUP applied new stores and watches but not
/// `[access]`, so a revoked writer kept writing; a reload that failed half
/// way left half of it applied.
@Suite("depotd reload: all or nothing, [access] included", .serialized)
struct ReloadAccessTests {
    func reload(_ d: DaemonProcess, _ text: String, _ count: Int) throws {
        try Data(text.utf8).write(to: d.folder.appendingPathComponent("depot.toml"))
        kill(d.process.processIdentifier, SIGHUP)
        #expect(d.notify.waitFor(prefix: "READY=1", count: count, timeout: 30) != nil)
    }

    func status(_ answer: String) -> Int { Int(answer.split(separator: " ").dropFirst().first ?? "") ?? 0 }

    @Test(
        "a revoked writer is refused after SIGHUP; a reload that cannot open a store applies nothing, access included",
        .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func accessReloads() throws {
        let access = "[access]\nwrite = [\"uid:65534\"]\n"
        let base = DaemonProcess.config(socketMode: "0666")
        let d = try DaemonProcess(config: base + "\n" + access)
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let prune = "/v1/stores/travel/history?older_than=1d"
        #expect(status(try UnixHTTP.asUser(65534, d.socket, "DELETE", prune)) == 200)

        // Revoked: refused from the reload on.
        try reload(d, base, 2)
        let refused = try UnixHTTP.asUser(65534, d.socket, "DELETE", prune)
        #expect(status(refused) == 403 && refused.contains("the write role is needed"), "\(refused)")

        // Granted again, with a store that cannot open: nothing applies.
        let broken =
            base + "\n" + access + """

                [[store]]
                name = "elsewhere"
                path = "/proc/depot-cannot/x.sqlite"

                  [[store.entity]]
                  name = "Trip"
                  identifier = "id"
                \(DaemonProcess.tripFields)
                """
        try reload(d, broken, 3)
        #expect(status(try UnixHTTP.asUser(65534, d.socket, "DELETE", prune)) == 403)
        #expect(try d.request("GET", "/v1/stores/elsewhere").status == 404)
        #expect(d.log.contains("configuration not reloaded; nothing of it applied"))
        #expect(d.log.contains("its folder cannot be created"))
        #expect(!d.log.contains("NSCocoaErrorDomain"))

        // The same without the broken store: granted.
        try reload(d, base + "\n" + access, 4)
        #expect(status(try UnixHTTP.asUser(65534, d.socket, "DELETE", prune)) == 200)
        #expect(d.stop() == 0)
    }
}
