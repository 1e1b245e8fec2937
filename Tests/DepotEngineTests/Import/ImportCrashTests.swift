import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

@Suite("Import crash (SIGKILL)")
struct ImportCrashTests {
    @Test(
        "an import killed with SIGKILL at several points and restarted ends exactly like a clean import, its counters agreeing with its history",
        arguments: [
            ("csv", "upsert", ""), ("csv", "replace", ""), ("csv", "skip", ""), ("json", "upsert", ""),
            // Runs of 250 records in memory merged into runs of 1,000: the
            // kills land inside runs whose parts were spilled to a file.
            ("csv", "upsert", "250 1000")
        ])
    func killAndResume(_ format: String, _ policy: String, _ runs: String) async throws {
        let folder = try TemporaryStore.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("in.\(format)").path
        // The same records as CSV or as a JSON array.
        let text = format == "csv" ? ImporterTests.generated(3_000) : ImporterTests.generatedJSONArray(3_000)
        try Data(text.utf8).write(to: URL(fileURLWithPath: input))
        func arguments(_ store: String) -> [String] {
            [
                folder.appendingPathComponent("\(store).sqlite").path, input,
                folder.appendingPathComponent("\(store).rejects").path, format, "100", policy
            ] + runs.split(separator: " ").map(String.init)
        }

        // One clean run.
        let clean = try ChildProcess("ImportChild", arguments: arguments("clean"))
        var cleanDone: String?
        while let line = clean.nextLine() {
            if line.hasPrefix("done ") { cleanDone = line }
        }
        clean.process.waitForExit()
        #expect(clean.process.exitStatus == 0)

        // Killed after saves 1, 7 and 18 (each kill lands somewhere in the
        // parse or save of the batch after), then run to its end.
        for killAfter in [1, 7, 18] {
            let child = try ChildProcess("ImportChild", arguments: arguments("killed"))
            var reached = false
            while let line = child.nextLine() {
                if line.hasPrefix("save "), let n = Int(line.dropFirst(5)), n >= killAfter {
                    reached = true
                    break
                }
            }
            #expect(reached)
            child.kill()
            #expect(child.process.endedBySignal)
        }
        let last = try ChildProcess("ImportChild", arguments: arguments("killed"))
        var resumedDone: String?
        var resumedSaves: [Int] = []
        while let line = last.nextLine() {
            if line.hasPrefix("done ") { resumedDone = line }
            if line.hasPrefix("save "), let n = Int(line.dropFirst(5)) { resumedSaves.append(n) }
        }
        // The last kill came before the end: the last run resumed after save 18 and had saves left to do.
        #expect(resumedSaves.count > 1 && resumedSaves.first! > 18)
        last.process.waitForExit()
        #expect(last.process.exitStatus == 0)

        // The counters, the records, the history and the rejects are one clean run's.
        #expect(cleanDone != nil)
        #expect(resumedDone == cleanDone)
        let a = try await Store.open(
            StoreConfiguration(
                name: "travel", path: arguments("clean")[0],
                entities: [TemporaryStore.tripEntity()]))
        let b = try await Store.open(
            StoreConfiguration(
                name: "travel", path: arguments("killed")[0],
                entities: [TemporaryStore.tripEntity()]))
        let all = FetchDescriptor(entity: "Trip", sort: [.init("id")])
        let cleanRows = try await a.reader.fetch(all)
        #expect(cleanRows.rows.count > 2_000)
        #expect(try await b.reader.fetch(all) == cleanRows)
        let cleanChanges = try await a.reader.history(limit: 100_000).flatMap(\.changes)
        let resumedChanges = try await b.reader.history(limit: 100_000).flatMap(\.changes)
        #expect(cleanChanges.filter { $0.kind == .insert }.count == cleanRows.rows.count)
        #expect(resumedChanges == cleanChanges)
        #expect(
            try String(contentsOfFile: arguments("clean")[2], encoding: .utf8)
                == String(contentsOfFile: arguments("killed")[2], encoding: .utf8))
        // The counters of the resumed run add up and agree with its history
        // (the generated file repeats identifiers, in the same save and across saves).
        let counters = try JSONDecoder().decode(
            ImportProgress.self, from: Data((resumedDone ?? "done {}").dropFirst(5).utf8))
        try await ImporterTests.expectAgreement(counters, b, job: "crash")
        #expect(counters.duplicates + counters.skipped > 0)
        try await a.close()
        try await b.close()
    }
}
