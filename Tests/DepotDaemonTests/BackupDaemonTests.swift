import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

@testable import DepotDaemon

/// Backups through depotd and depotctl (DESIGN §20, issue 53 item 1): a
/// job that copies a store while it serves, into backup_dir or a path the
/// daemon may write, its manifest in the job and beside the copy, and the
/// refusals a careless or hostile client meets.
@Suite("depotd: backups")
struct BackupDaemonTests {
    @Test("depotctl backup --verify copies the store into backup_dir with its manifest; backup list shows it")
    func backupIntoBackupDir() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        func ctl(_ args: String...) throws -> Ctl.Result {
            let r = try Ctl.run(args, socket: d.socket)
            #expect(r.status == 0, "depotctl \(args.joined(separator: " ")): \(r.err)")
            return r
        }
        let file = d.folder.appendingPathComponent("inbox/trips.csv")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(tripsCSV(300).utf8).write(to: file)
        _ = try ctl("import", file.path, "--store", "travel", "--entity", "Trip")
        let job = try ctl("backup", "travel", "--verify", "--json").json
        #expect(job["state"] as? String == "succeeded")
        #expect(job["kind"] as? String == "backup")
        let manifest = try #require(job["backup"] as? [String: Any])
        #expect(manifest["store"] as? String == "travel")
        #expect(manifest["verified"] as? Bool == true)
        #expect((manifest["entities"] as? [String: Int]) == ["Trip": 300])
        #expect(manifest["token"] as? String != nil)
        // In backup_dir (state_dir/backups by default), under the path the job shows.
        let path = try #require(job["path"] as? String)
        let backups = d.folder.appendingPathComponent("state/backups").resolvingSymlinksInPath().path
        #expect(URL(fileURLWithPath: path).deletingLastPathComponent().resolvingSymlinksInPath().path == backups)
        #expect(manifest["file"] as? String == URL(fileURLWithPath: path).lastPathComponent)
        let copied = try JobRecordTests.sqlite(path, "SELECT count(*) FROM Trip").trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(copied == "300")
        #expect(
            try JobRecordTests.sqlite(path, "PRAGMA journal_mode").trimmingCharacters(in: .whitespacesAndNewlines)
                == "delete")
        // The manifest beside it is the job's.
        let beside =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Store.manifestPath(for: path)))) as? [String: Any]
        #expect(beside?["sha256"] as? String == manifest["sha256"] as? String)
        // The job keeps its manifest across a restart.
        let id = try #require(job["id"] as? String)
        d.stop()
        let again = try DaemonProcess(folder: d.folder)
        defer { again.stop() }
        let kept = try again.request("GET", "/v1/jobs/\(id)").object
        #expect((kept["backup"] as? [String: Any])?["sha256"] as? String == manifest["sha256"] as? String)
        // Listed, from the folder, by depotctl on this machine.
        let list = try Ctl.run(["backup", "list", backups], socket: again.socket)
        #expect(list.status == 0, "\(list.err)")
        #expect(list.out.contains(URL(fileURLWithPath: path).lastPathComponent))
        #expect(list.out.contains("travel"))
        #expect(list.out.contains("yes"))
        // A copy that lost bytes is marked.
        try FileHandle(forWritingTo: URL(fileURLWithPath: path)).truncate(atOffset: 4096)
        let marked = try Ctl.run(["backup", "list", backups, "--json"], socket: again.socket)
        #expect(
            marked.json["problem"] as? String
                == "the copy holds 4096 bytes, its manifest says \(manifest["bytes"] ?? "")")
    }

    @Test("a backup goes only under backup_dir or an import root, never over a file; bad settings are 400")
    func refusals() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let inbox = d.folder.appendingPathComponent("inbox")
        try FileManager.default.createDirectory(at: inbox, withIntermediateDirectories: true)
        func submit(_ body: String) throws -> (status: Int, error: String) {
            let r = try d.request("POST", "/v1/jobs", body: body)
            return (r.status, ((r.object["error"] as? [String: Any])?["message"] as? String) ?? "")
        }
        // Outside the roots: the daemon writes only where it may read.
        let outside = try submit(#"{"kind":"backup","store":"travel","path":"/tmp/depot-backup-outside.sqlite"}"#)
        #expect(outside.status == 403)
        #expect(outside.error.contains("is not under backup_dir"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/depot-backup-outside.sqlite"))
        // Through a link that leaves the roots.
        try FileManager.default.createSymbolicLink(
            atPath: inbox.appendingPathComponent("away").path, withDestinationPath: "/tmp")
        let linked = try submit(#"{"kind":"backup","store":"travel","path":"\#(inbox.path)/away/x.sqlite"}"#)
        #expect(linked.status == 403)
        // Never beside the daemon's stores, even under an import root that holds them
        // (the api fuzzing's configuration has one: it found a backup aimed at a store's file).
        let rooted = try DaemonProcess(
            config: DaemonProcess.config().replacingOccurrences(
                of: "import_roots = [\"inbox\"]", with: "import_roots = [\".\"]"))
        defer { rooted.stop(); try? FileManager.default.removeItem(at: rooted.folder) }
        let journal = rooted.folder.appendingPathComponent("state/travel.sqlite-journal").path
        let beside = try rooted.request(
            "POST", "/v1/jobs", body: #"{"kind":"backup","store":"travel","path":"\#(journal)"}"#)
        #expect(beside.status == 403, "\(beside.body)")
        #expect(beside.body.contains("is in the daemon's state_dir"), "\(beside.body)")
        #expect(!FileManager.default.fileExists(atPath: journal))
        // The store's own file: the place is refused before the file is
        // looked at (a 409 would tell which files exist there).
        let store = rooted.folder.appendingPathComponent("state/travel.sqlite").path
        #expect(
            try rooted.request("POST", "/v1/jobs", body: #"{"kind":"backup","store":"travel","path":"\#(store)"}"#)
                .status == 403)
        // Never over a file.
        let existing = inbox.appendingPathComponent("keep.sqlite")
        try Data("keep".utf8).write(to: existing)
        let over = try submit(#"{"kind":"backup","store":"travel","path":"\#(existing.path)"}"#)
        #expect(over.status == 409)
        #expect(try String(contentsOf: existing, encoding: .utf8) == "keep")
        // A relative path, an empty one, a verify that is not a boolean, a store not there.
        #expect(try submit(#"{"kind":"backup","store":"travel","path":"x.sqlite"}"#).status == 400)
        #expect(try submit(#"{"kind":"backup","store":"travel","path":""}"#).status == 400)
        #expect(try submit(#"{"kind":"backup","store":"travel","verify":"yes"}"#).status == 400)
        #expect(try submit(#"{"kind":"backup","store":"nope"}"#).status == 404)
        // Into a folder under an import root: a new file named for the store.
        let folder = try Ctl.run(["backup", "travel", "--to", inbox.path, "--json"], socket: d.socket)
        #expect(folder.status == 0, "\(folder.err)")
        let path = try #require(folder.json["path"] as? String)
        #expect(path.hasPrefix(inbox.resolvingSymlinksInPath().path + "/travel-"))
        #expect(FileManager.default.fileExists(atPath: Store.manifestPath(for: path)))
        // depotctl says why, with the daemon's words, and exits 1.
        let refused = try Ctl.run(["backup", "travel", "--to", existing.path], socket: d.socket)
        #expect(refused.status == 1)
        #expect(refused.err.contains("never overwrites"))
    }

    @Test("[store.backup]: a backup every `every` into backup_dir, the newest `keep` kept, older ones removed")
    func schedule() throws {
        let d = try DaemonProcess(
            config: DaemonProcess.config(extra: "\n  [store.backup]\n  every = \"1s\"\n  keep = 2\n"))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // The fourth scheduled backup's submission comes after the third's end
        // and its removals: the folder then holds the newest two and the fourth's partial copy.
        var succeeded: [String] = []
        var fourth: String?
        _ = try UnixHTTP.stream(socket: d.socket, path: "/v1/events") { line in
            guard let job = json(line)["job"] as? [String: Any], job["kind"] as? String == "backup",
                let id = job["id"] as? String
            else { return false }
            #expect(job["author"] as? String == "depotd")
            if job["state"] as? String == "succeeded", !succeeded.contains(id) { succeeded.append(id) }
            if succeeded.count == 3, !succeeded.contains(id) { fourth = id }
            return fourth != nil
        }
        let files = try succeeded.map {
            try #require(
                (try d.request("GET", "/v1/jobs/\($0)").object["backup"] as? [String: Any])?["file"] as? String)
        }
        // Stopped, so that no later backup comes between the look and the facts.
        #expect(d.stop() == 0)
        let folder = d.folder.appendingPathComponent("state/backups").path
        let kept = BackupRestore.backups(in: folder, store: "travel").map(\.manifest.file)
        let copies = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sqlite") }
        // The fourth may have ended before the stop (its removals then done, or cut by the stop).
        #expect((2...3).contains(kept.count), "\(kept)")
        // Every copy under its final name has its manifest (written first).
        #expect(Set(copies).isSubset(of: Set(kept)), "\(copies) against \(kept)")
        // The first to succeed went once the third succeeded, before the fourth began; the third stays.
        #expect(!kept.contains(files[0]), "\(files[0]) kept: \(kept)")
        #expect(kept.contains(files[1]) || kept.count == 2, "\(kept)")
        #expect(kept.contains(files[2]), "\(files[2]) not kept: \(kept)")
    }

    @Test("backups named in the same millisecond get names of their own")
    func namesOfTheirOwn() {
        let names = (0..<50).map { _ in ControlRoutes.newBackupPath(folder: "/b", store: "travel") }
        #expect(Set(names).count == 50, "\(names)")
        #expect(names.allSatisfy { $0.hasPrefix("/b/travel-") && $0.hasSuffix(".sqlite") })
    }

    @Test("[store.backup] mistakes are named at their keys")
    func scheduleMistakes() {
        func problems(_ keys: String) -> [String] {
            let error = #expect(throws: DaemonConfig.Problems.self) {
                try DaemonConfig.parse(BackendConfigTests.store(keys), file: "/etc/depot.toml")
            }
            return error?.problems ?? []
        }
        func has(_ all: [String], _ text: String) {
            #expect(all.contains { $0.contains(text) }, "\(text) not in \(all)")
        }
        has(problems("backup = 3"), "store[0].backup: must be a table")
        has(problems("[store.backup]\nkeep = 2"), "store[0].backup.every: is required")
        has(problems("[store.backup]\nevery = \"0s\""), "store[0].backup.every")
        has(problems("[store.backup]\nevery = \"1h\"\nkeep = 0"), "store[0].backup.keep")
        has(problems("[store.backup]\nevery = \"1h\"\nkep = 2"), "store[0].backup.kep")
        has(
            problems(
                "backend = \"postgresql\"\nurl = \"postgresql://depot@/depot?host=/run/postgresql\"\n[store.backup]\nevery = \"1h\""
            ),
            "store[0].backup: is for an SQLite store")
        let config = try? DaemonConfig.parse(
            BackendConfigTests.store("[store.backup]\nevery = \"24h\""), file: "/etc/depot.toml")
        #expect(config?.stores[0].backupSchedule == StoreConfiguration.BackupSchedule(every: .seconds(86_400), keep: 7))
        #expect(config?.backupDir == "/tmp/depot-config-test/backups")
    }

    @Test("depotd killed with SIGKILL during a backup: nothing partial under a final name; the next start finishes it")
    func killedDuringBackup() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder)
        let records = 200_000
        let imported = try d.request(
            "POST", "/v1/stores/travel/entities/Trip/import?format=csv", body: tripsCSV(records))
        #expect(try d.jobEnded(try #require(imported.object["id"] as? String))["inserted"] as? Int == records)
        let backups = folder.appendingPathComponent("state/backups").path
        // Killed as the job starts, then as its copy has begun: each time
        // restarted, and the job resumed, until it ends.
        for when in ["running", "copying"] {
            let submitted = try d.request(
                "POST", "/v1/jobs", body: #"{"kind":"backup","store":"travel","verify":true}"#)
            let id = try #require(submitted.object["id"] as? String)
            let path = try #require(submitted.object["path"] as? String)
            var ended = false
            _ = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") { line in
                let job = json(line)
                ended = ["succeeded", "failed", "cancelled"].contains(job["state"] as? String ?? "")
                let copying = (job["bytes_read"] as? Int ?? 0) > 0
                return ended || job["state"] as? String == "running" && (when == "running" || copying)
            }
            kill(d.process.processIdentifier, SIGKILL)
            d.process.waitForExit()
            // Nothing under the final names but a whole copy with its manifest, or its manifest alone.
            let manifestThere = FileManager.default.fileExists(atPath: Store.manifestPath(for: path))
            if FileManager.default.fileExists(atPath: path) {
                #expect(manifestThere, "a copy without its manifest after a kill (\(when), ended: \(ended))")
                #expect(
                    try JobRecordTests.sqlite(path, "PRAGMA integrity_check").trimmingCharacters(
                        in: .whitespacesAndNewlines) == "ok")
            }
            d = try DaemonProcess(folder: folder)
            let end = try d.jobEnded(id)
            #expect(end["state"] as? String == "succeeded", "\(end)")
            let manifest = try #require(end["backup"] as? [String: Any])
            #expect(manifest["job"] as? String == id)
            #expect((manifest["entities"] as? [String: Int]) == ["Trip": records])
            #expect(
                try JobRecordTests.sqlite(path, "SELECT count(*) FROM Trip").trimmingCharacters(
                    in: .whitespacesAndNewlines)
                    == String(records))
            #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: backups)
        #expect(left.filter { $0.hasSuffix(".partial") || $0.hasSuffix("-journal") }.isEmpty, "\(left)")
        #expect(left.filter { $0.hasSuffix(".sqlite") }.count == 2, "\(left)")
        d.stop()
    }

    /// Runs `depotd restore ARGS`: its exit status, stdout and stderr.
    static func restore(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        try ChildProcess.run(DaemonProcess.executable, ["restore"] + args)
    }

    @Test("depotd restore puts the latest backup back with the daemon stopped; refused while it runs or over a file")
    func restoreWhileStopped() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let config = d.folder.appendingPathComponent("depot.toml").path
        let backups = d.folder.appendingPathComponent("state/backups").path
        let imported = try d.request("POST", "/v1/stores/travel/entities/Trip/import?format=csv", body: tripsCSV(300))
        _ = try d.jobEnded(imported.object["id"] as? String ?? "")
        let job = try Ctl.run(["backup", "travel", "--json"], socket: d.socket)
        #expect(job.status == 0, "\(job.err)")
        let token = try #require((job.json["backup"] as? [String: Any])?["token"] as? String)
        // A wrong job after the backup: every trip deleted.
        let deleted = try d.request("POST", "/v1/jobs", body: #"{"kind":"delete","store":"travel","entity":"Trip"}"#)
        #expect(try d.jobEnded(deleted.object["id"] as? String ?? "")["deleted"] as? Int == 300)
        // Never while the daemon serves the store.
        let running = try Self.restore(["--config", config, "--from", backups, "--latest", "--force"])
        #expect(running.status == 1)
        #expect(running.err.contains("is open in process \(d.process.processIdentifier) (depotd)"), "\(running.err)")
        #expect(d.stop() == 0)
        // Not over the store's file without --force; not to a token no backup holds; not to a time yet.
        let over = try Self.restore(["--config", config, "--from", backups, "--latest"])
        #expect(over.status == 1)
        #expect(over.err.contains("--force replaces it"), "\(over.err)")
        let missing = try Self.restore(["--config", config, "--from", backups, "--to-token", "99999", "--force"])
        #expect(missing.status == 1)
        #expect(missing.err.contains("no backup of travel at token 99999") && missing.err.contains("latest \(token)"))
        let at = try Self.restore(["--config", config, "--from", backups, "--at", "2026-11-29T08:00:00Z"])
        #expect(at.status != 0)
        #expect(at.err.contains("need the store's archive"), "\(at.err)")
        // The backup back in place: its records, and its token is the store's last.
        let done = try Self.restore(["--config", config, "--from", backups, "--to-token", token, "--force", "--verify"])
        #expect(done.status == 0, "\(done.err)")
        #expect(done.out.contains("restored travel at token \(token)"), "\(done.out)")
        #expect(done.out.contains("checked: size, SHA-256, integrity, counts"), "\(done.out)")
        let again = try DaemonProcess(folder: d.folder)
        defer { again.stop() }
        let count = try again.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#)
        #expect(count.object["count"] as? Int == 300)
        let store = try again.request("GET", "/v1/stores/travel").object
        #expect(store["token"] as? String == token)
    }
}
