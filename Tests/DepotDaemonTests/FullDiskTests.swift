import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

/// A disk that fills up under an import, made real: the daemon's state on a
/// small tmpfs mounted by the test (root only; skipped with a message
/// elsewhere).
@Suite("depotd on a full disk", .serialized)
struct FullDiskTests {
    @Test(
        "a backup onto a full disk fails saying so, leaves no file there, and the store serves on (DESIGN §20)",
        .enabled(if: Tmpfs.canMount, "needs root to mount a small tmpfs; not run here"))
    func backupOntoFullDisk() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let small = folder.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        #expect(Tmpfs.mount(size: "1m", at: small.path))
        defer { Tmpfs.unmount(small.path) }
        let d = try DaemonProcess(
            folder: folder,
            config: DaemonProcess.config(extra: "").replacingOccurrences(
                of: "import_roots = [\"inbox\"]", with: "import_roots = [\"inbox\"]\nbackup_dir = \"small\""))
        defer { d.stop() }
        let imported = try d.request(
            "POST", "/v1/stores/travel/entities/Trip/import?format=csv", body: tripsCSV(50_000))
        #expect(try d.jobEnded(imported.object["id"] as? String ?? "")["inserted"] as? Int == 50_000)
        let accepted = try d.request("POST", "/v1/jobs", body: #"{"kind":"backup","store":"travel"}"#)
        #expect(accepted.status == 202, "\(accepted.body)")
        let last = try d.jobEnded(accepted.object["id"] as? String ?? "")
        #expect(last["state"] as? String == "failed")
        #expect((last["error"] as? String)?.contains("the disk is full") == true, "\(last["error"] ?? "")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: small.path).isEmpty)
        #expect(try d.request("GET", "/v1/health").status == 200)
        let saved = try d.request(
            "POST", "/v1/stores/travel/save",
            body:
                #"{"changes":[{"insert":"Trip","record":{"id":"after","name":"a","startDate":"2026-01-01","budget":1,"isFavorite":false}}]}"#
        )
        #expect(saved.status == 200, "\(saved.body)")
    }

    @Test(
        "an import that fills the disk fails saying so, keeps its saves and their history; the daemon serves on",
        .enabled(if: Tmpfs.canMount, "needs root to mount a small tmpfs; not run here"))
    func importFillsTheDisk() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let small = folder.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        #expect(Tmpfs.mount(size: "6m", at: small.path))
        defer { Tmpfs.unmount(small.path) }
        let config = DaemonProcess.config(saveEvery: 5_000).replacingOccurrences(
            of: "state_dir = \"state\"", with: "state_dir = \"small/state\"")
        let d = try DaemonProcess(folder: folder, config: config)
        defer { d.stop() }
        let file = folder.appendingPathComponent("inbox/big.csv")
        try Data(tripsCSV(300_000).utf8).write(to: file)
        let accepted = try d.request(
            "POST", "/v1/jobs",
            body: "{\"kind\":\"import\",\"store\":\"travel\",\"entity\":\"Trip\",\"path\":\"\(file.path)\"}")
        #expect(accepted.status == 202)
        let last = try d.jobEnded(accepted.object["id"] as? String ?? "")
        #expect(last["state"] as? String == "failed")
        #expect((last["error"] as? String)?.contains("the disk is full") == true, "\(last["error"] ?? "")")
        // Serving on: health, and what was saved is there, each record with its one insert in the history.
        #expect(try d.request("GET", "/v1/health").status == 200)
        let count =
            try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#).object["count"]
            as? Int ?? -1
        #expect(count > 0 && count < 300_000, "\(count)")
        #expect(count == last["inserted"] as? Int, "whole saves only: \(count), \(last)")
        var inserts = 0
        var after: String?
        while true {
            let page = try d.request(
                "GET", "/v1/stores/travel/history?limit=1000" + (after.map { "&after=\($0)" } ?? ""))
            let transactions = page.object["transactions"] as? [[String: Any]] ?? []
            if transactions.isEmpty { break }
            for t in transactions { inserts += (t["changes"] as? [Any])?.count ?? 0 }
            after = transactions.last?["token"] as? String
        }
        #expect(inserts == count)
        // An upload that does not fit: 507 disk_full, nothing left in the spool.
        let upload = try UnixHTTP.request(
            socket: d.socket, method: "POST", path: "/v1/stores/travel/entities/Trip/import?format=csv",
            body: Data(tripsCSV(100_000, prefix: "u").utf8), contentType: "text/csv")
        #expect(upload.status == 507, "\(upload.body)")
        #expect((upload.object["error"] as? [String: Any])?["code"] as? String == "disk_full")
        let spool = small.appendingPathComponent("state/spool").path
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []).isEmpty)
        #expect(try d.request("GET", "/v1/health").status == 200)
        #expect(d.process.isRunning)
    }
}
