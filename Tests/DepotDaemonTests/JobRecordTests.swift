import ChildProcessSupport
import DepotClient
import DepotEngine
import DepotWire
import Foundation
import Testing

@testable import DepotDaemon

/// Issue 30, item 3: the job table is typed, a record is written once per
/// change of state, and the counters are one type from the import's
/// checkpoint to the client.
@Suite("depotd: the job record", .serialized)
struct JobRecordTests {
    static func sqlite(_ store: String, _ sql: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        p.arguments = [store, sql]
        let out = Pipe()
        p.standardOutput = out
        try p.runClosingFiles()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitForExit()
        #expect(p.exitStatus == 0, "sqlite3 \(sql)")
        return text
    }

    @Test("each job's record is written once per state: queued, running, then its end; never for progress")
    func writtenOncePerState() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Saves of 1,000 records at most: the import reports progress at each.
        var d = try DaemonProcess(folder: folder, config: DaemonProcess.config(saveEvery: 1_000))
        #expect(d.stop() == 0)
        // Every write of depot_jobs, as the store sees it, with the state
        // column and the state inside the record.
        let store = folder.appendingPathComponent("state/travel.sqlite").path
        _ = try Self.sqlite(
            store,
            """
            CREATE TABLE job_writes(n INTEGER PRIMARY KEY, id TEXT, state TEXT, recorded TEXT);
            CREATE TRIGGER job_inserted AFTER INSERT ON depot_jobs BEGIN
              INSERT INTO job_writes(id, state, recorded)
              VALUES (new.id, new.state, json_extract(CAST(new.record AS TEXT), '$.state'));
            END;
            CREATE TRIGGER job_updated AFTER UPDATE ON depot_jobs BEGIN
              INSERT INTO job_writes(id, state, recorded)
              VALUES (new.id, new.state, json_extract(CAST(new.record AS TEXT), '$.state'));
            END;
            """)
        d = try DaemonProcess(folder: folder)
        let file = d.folder.appendingPathComponent("inbox/trips.csv")
        try Data(tripsCSV(10_000).utf8).write(to: file)
        let imported =
            try d.request(
                "POST", "/v1/jobs",
                body: #"{"kind":"import","store":"travel","entity":"Trip","path":"\#(file.path)"}"#
            ).object["id"] as? String ?? ""
        let importEnd = try d.jobEnded(imported)
        #expect(importEnd["state"] as? String == "succeeded")
        #expect((importEnd["saves"] as? Int ?? 0) > 1 && importEnd["inserted"] as? Int == 10_000, "\(importEnd)")
        let deleted =
            try d.request(
                "POST", "/v1/jobs",
                body: #"{"kind":"delete","store":"travel","entity":"Trip","where":"budget < 500"}"#
            ).object["id"] as? String ?? ""
        let deleteEnd = try d.jobEnded(deleted)
        #expect(deleteEnd["state"] as? String == "succeeded")
        #expect(d.stop() == 0)
        let writes = try Self.sqlite(store, "SELECT id, state, recorded FROM job_writes ORDER BY n")
            .split(separator: "\n").map(String.init)
        #expect(
            writes == [
                "\(imported)|queued|queued", "\(imported)|running|running", "\(imported)|succeeded|succeeded",
                "\(deleted)|queued|queued", "\(deleted)|running|running", "\(deleted)|succeeded|succeeded"
            ])
        // The stored end has the counters the events showed.
        let stored = try Self.sqlite(
            store, "SELECT CAST(record AS TEXT) FROM depot_jobs WHERE id = '\(imported)'")
        let record = try JSONDecoder().decode(JobRecord.self, from: Data(stored.utf8))
        #expect(record.inserted == 10_000 && record.saves == importEnd["saves"] as? Int && record.read == 10_000)
        #expect(record.counters.bytesRead == record.counters.bytesTotal && record.bytesTotal > 0)
    }

    @Test("the counters read the same through the daemon's record, the client's job and an import's checkpoint")
    func oneCountersType() throws {
        var counters = Counters()
        counters.read = 7
        counters.inserted = 4
        counters.updated = 1
        counters.rejected = 2
        counters.bytesRead = 900
        counters.bytesTotal = 1_000
        counters.saves = 3
        var record = JobRecord(id: "j1", kind: .import, store: "travel", entity: "Trip", author: "me")
        record.counters = counters
        record.state = .succeeded
        let bytes = try JSONEncoder().encode(record)
        let object = try JSONSerialization.jsonObject(with: bytes) as? [String: Any] ?? [:]
        // At the top of the record, under the names the API documents.
        #expect(
            object["bytes_read"] as? Int == 900 && object["inserted"] as? Int == 4 && object["exported"] as? Int == 0)
        #expect(try JSONDecoder().decode(JobRecord.self, from: bytes).counters == counters)
        let job = try JSONDecoder().decode(Job.self, from: bytes)
        #expect(job.counters == counters && job.rejected == 2 && job.bytesTotal == 1_000)
        // A checkpoint written before the counters were a type of their own
        // (camelCase byte counts, no deleted or exported) reads as it was.
        let earlier = Data(
            (#"{"read":7,"inserted":4,"updated":1,"unchanged":0,"skipped":0,"duplicates":0,"rejected":2,"#
                + #""bytesRead":900,"bytesTotal":1000,"saves":3,"elapsed":1.5,"finished":false}"#).utf8)
        let progress = try JSONDecoder().decode(ImportProgress.self, from: earlier)
        #expect(progress.counters == counters && progress.elapsed == 1.5 && !progress.finished)
        // And a new one reads back whole.
        #expect(try JSONDecoder().decode(ImportProgress.self, from: JSONEncoder().encode(progress)) == progress)
    }
}
