import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

/// A computed update job killed with SIGKILL between and inside its saves,
/// depotd restarted each time (DESIGN §17): every record computed exactly
/// once, the job's counters and history those of one clean pass.
@Suite("depotd: a computed update under kill -9")
struct ComputeCrashTests {
    /// 60,000 records killed 20 times in CI; the soak of issue #32 (5M
    /// records, 20 kills) is `DEPOT_COMPUTE_CRASH_RECORDS=5000000
    /// DEPOT_COMPUTE_CRASH_KILLS=20` (BENCHMARKS.md).
    static let records =
        ProcessInfo.processInfo.environment["DEPOT_COMPUTE_CRASH_RECORDS"].flatMap { Int($0) } ?? 60_000
    static let kills = ProcessInfo.processInfo.environment["DEPOT_COMPUTE_CRASH_KILLS"].flatMap { Int($0) } ?? 20
    static var saveEvery: Int { max(1_000, records / (kills * 3)) }

    @Test(
        "a computed update killed with SIGKILL at 20 random points and resumed by depotd computes each record exactly once; counters and history agree"
    )
    func killAndResume() async throws {
        let config = DaemonProcess.config(saveEvery: Self.saveEvery).replacingOccurrences(
            of: "preserve_on_delete = [\"name\"]", with: "preserve_on_delete = [\"name\"]\n  history = \"values\"")
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder, config: config)
        let imported = try d.request(
            "POST", "/v1/stores/travel/entities/Trip/import?format=csv", body: tripsCSV(Self.records))
        let importID = try #require(imported.object["id"] as? String)
        #expect(try d.jobEnded(importID)["inserted"] as? Int == Self.records)
        let submitted = try d.request(
            "POST", "/v1/jobs",
            body: #"{"kind":"update","store":"travel","entity":"Trip","compute":{"budget":"budget * 2 + 1"}}"#)
        #expect(submitted.status == 202, "\(submitted.body)")
        let id = try #require(submitted.object["id"] as? String)
        // Killed at random points, each after a further one to two saves'
        // worth of records (the kill lands somewhere in the save after),
        // then restarted: depotd resumes the job.
        var target = 0
        for _ in 0..<Self.kills {
            target += Int.random(in: Self.saveEvery...(2 * Self.saveEvery))
            var reached = false
            _ = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") { line in
                let record = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
                reached = (record["updated"] as? Int ?? 0) >= target
                return reached || ["succeeded", "failed", "cancelled"].contains(record["state"] as? String ?? "")
            }
            #expect(reached, "the job ended before \(target) records")
            kill(d.process.processIdentifier, SIGKILL)
            d.process.waitForExit()
            d = try DaemonProcess(folder: folder, config: config)
        }
        let end = try d.jobEnded(id)
        #expect(end["state"] as? String == "succeeded", "\(end)")
        #expect(end["updated"] as? Int == Self.records && end["rejected"] as? Int == 0, "\(end)")
        #expect(d.stop() == 0)

        // Every budget computed once: (i % 1000 + 0.5) * 2 + 1, none twice.
        let store = try await Self.read(folder.appendingPathComponent("state/travel.sqlite").path, job: id)
        let budgets = store.budgets
        #expect(budgets.count == Self.records)
        let wrong = (0..<Self.records).filter { budgets["t\($0)"] != Double($0 % 1000) * 2 + 2 }
        #expect(wrong.isEmpty, "\(wrong.count) budgets computed other than once, e.g. t\(wrong.first ?? 0)")
        // The history holds one update of each record, from the job.
        #expect(store.updates == Self.records && store.updatedRecords == Self.records)
    }

    /// The store file read back after depotd stopped.
    struct Stored {
        var budgets: [String: Double]
        var updates: Int
        var updatedRecords: Int
    }

    static func read(_ path: String, job: String) async throws -> Stored {
        let store = try await Store.open(StoreConfiguration(name: "travel", path: path, entities: [Self.trip()]))
        let set = try await store.reader.fetch(FetchDescriptor(entity: "Trip", fields: ["id", "budget"]))
        var budgets: [String: Double] = [:]
        for row in set.rows {
            if case .string(let id) = row[0], case .double(let b) = row[1] { budgets[id] = b }
        }
        let changes = try await store.reader.history(limit: 100_000).filter { $0.job == job }.flatMap(\.changes)
        try await store.close()
        return Stored(
            budgets: budgets, updates: changes.filter { $0.kind == .update }.count,
            updatedRecords: Set(changes.map(\.identifier)).count)
    }

    static func trip() throws -> EntitySchema {
        try EntitySchema(
            name: "Trip",
            fields: [
                Field(name: "id", type: .string), Field(name: "name", type: .string),
                Field(name: "destination", type: .string, isOptional: true), Field(name: "startDate", type: .date),
                Field(name: "endDate", type: .date, isOptional: true), Field(name: "budget", type: .double),
                Field(name: "isFavorite", type: .bool), Field(name: "notes", type: .string, isOptional: true)
            ],
            identifier: ["id"], indexes: [["destination"]], preserveOnDelete: ["name"], history: .values)
    }
}
