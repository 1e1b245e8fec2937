import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

/// A migrate job killed with SIGKILL at random points and resumed by depotd
/// (DESIGN §18), while a client changes records: the end equals a clean
/// run's — every record converted from its last value, the records whose
/// conversion fails rejected and deleted once each, and nothing else.
@Suite("depotd: a migrate job under kill -9")
struct MigrateCrashTests {
    /// 60,000 records killed 20 times in CI; more with
    /// `DEPOT_MIGRATE_CRASH_RECORDS` and `DEPOT_MIGRATE_CRASH_KILLS`.
    static let records =
        ProcessInfo.processInfo.environment["DEPOT_MIGRATE_CRASH_RECORDS"].flatMap { Int($0) } ?? 60_000
    static let kills = ProcessInfo.processInfo.environment["DEPOT_MIGRATE_CRASH_KILLS"].flatMap { Int($0) } ?? 20
    static var saveEvery: Int { max(1_000, records / (kills * 3)) }
    /// Records whose budget (1e300) has no int of cents: rejected.
    static let bad = 3

    @Test(
        "a migrate job killed with SIGKILL at 20 random points, records changed between, ends as a clean run: each record converted from its last value, the bad ones rejected once"
    )
    func killAndResume() async throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let before = DaemonProcess.config(saveEvery: Self.saveEvery)
        var d = try DaemonProcess(folder: folder, config: before)
        var csv = tripsCSV(Self.records)
        for i in 0..<Self.bad { csv += "bad\(i),Bad \(i),Nowhere,2025-03-10,1e300,false\n" }
        let imported = try d.request("POST", "/v1/stores/travel/entities/Trip/import?format=csv", body: csv)
        let importID = try #require(imported.object["id"] as? String)
        #expect(try d.jobEnded(importID)["inserted"] as? Int == Self.records + Self.bad)
        _ = d.stop()
        // budget as int cents: the store starts its migrate job when it opens.
        let after = before.replacingOccurrences(
            of: #"budget = "double""#, with: #"budget = { type = "int", convert = "trunc:(budget * 100)" }"#)
        try Data(after.utf8).write(to: folder.appendingPathComponent("depot.toml"))
        d = try DaemonProcess(folder: folder)
        let jobs = try d.request("GET", "/v1/jobs").object["jobs"] as? [[String: Any]] ?? []
        let migrate = jobs.filter { $0["kind"] as? String == "migrate" }
        #expect(migrate.count == 1, "\(jobs)")
        let id = try #require(migrate.first?["id"] as? String)
        // Killed after a further one to two saves' worth of records each
        // time, then restarted; between, a client changes a record.
        var changed: [Int: Double] = [:]
        var target = 0
        var killed = 0
        for kill in 0..<Self.kills {
            target += Int.random(in: Self.saveEvery...(2 * Self.saveEvery))
            var reached = false
            _ = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") { line in
                let record = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
                reached = (record["read"] as? Int ?? 0) >= target
                return reached || ["succeeded", "failed", "cancelled"].contains(record["state"] as? String ?? "")
            }
            if !reached { break }
            Foundation.kill(d.process.processIdentifier, SIGKILL)
            killed += 1
            d.process.waitForExit()
            d = try DaemonProcess(folder: folder)
            // Still served as the store holds it: a double, until the switch.
            let k = Int.random(in: 0..<Self.records)
            let budget = Double(kill) + 0.25
            let patched = try d.request(
                "PATCH", "/v1/stores/travel/entities/Trip/records/t\(k)", body: #"{"budget": \#(budget)}"#)
            if patched.status == 200 { changed[k] = budget }
        }
        let end = try d.jobEnded(id)
        #expect(killed == Self.kills, "killed \(killed) times before the job ended")
        // Changes made while it migrated (a PATCH after the switch, with a
        // budget no int holds, is refused and not counted).
        #expect(!changed.isEmpty)
        #expect(end["state"] as? String == "succeeded", "\(end)")
        #expect(end["rejected"] as? Int == Self.bad && end["deleted"] as? Int == Self.bad, "\(end)")
        let rejects = try String(contentsOfFile: try #require(end["rejects"] as? String), encoding: .utf8)
        let lines = rejects.split(separator: "\n")
        #expect(lines.count == Self.bad && lines.allSatisfy { $0.contains(#""identifier":"bad"#) }, "\(rejects)")
        #expect(d.stop() == 0)

        // The store read back: every budget converted once from its last value.
        let path = folder.appendingPathComponent("state/travel.sqlite").path
        var trip = try ComputeCrashTests.trip()
        trip = try EntitySchema(
            name: "Trip",
            fields: trip.fields.map { $0.name == "budget" ? Field(name: "budget", type: .int) : $0 },
            identifier: ["id"], indexes: [["destination"]], preserveOnDelete: ["name"])
        let store = try await Store.open(StoreConfiguration(name: "travel", path: path, entities: [trip]))
        #expect(store.settings.schema.migrations.isEmpty)
        let set = try await store.reader.fetch(FetchDescriptor(entity: "Trip", fields: ["id", "budget"]))
        var budgets: [String: Int64] = [:]
        for row in set.rows {
            if case .string(let id) = row[0], case .int(let b) = row[1] { budgets[id] = b }
        }
        let deletes = try await store.reader.history(limit: 1_000_000).filter { $0.job == id }.flatMap(\.changes)
        try await store.close()
        #expect(set.rows.count == Self.records && budgets.count == Self.records)
        let wrong = (0..<Self.records).filter { i in
            let expected = changed[i].map { Int64($0 * 100) } ?? Int64(i % 1000) * 100 + 50
            return budgets["t\(i)"] != expected
        }
        #expect(
            wrong.isEmpty,
            "\(wrong.count) budgets wrong, e.g. t\(wrong.first ?? 0): \(budgets["t\(wrong.first ?? 0)"] ?? -1)")
        #expect(deletes.count == Self.bad && deletes.allSatisfy { $0.kind == .delete }, "\(deletes.count)")
    }
}
