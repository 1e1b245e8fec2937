import DepotEngine
import Foundation
import Testing

/// Imports on both backends: the same file gives the same counters, records,
/// history and rejects on an SQLite store and on a PostgreSQL store, and an
/// import cancelled after some saves and run again under the same job ends
/// where a clean run ends, exactly once.
@Suite("Import contract: SQLite and PostgreSQL")
struct ImportContractTests {
    /// `count` trips; every 7th repeats an earlier id with other values (some
    /// in the same chunk, most farther), every 53rd has a bad budget, every
    /// 97th a day that does not exist, every 89th no name.
    static func generated(_ count: Int) -> String {
        var text = "id,name,destination,startDate,endDate,budget,isFavorite,notes\n"
        var state: UInt64 = 42
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        for i in 0..<count {
            let id = i % 7 == 6 ? "T\(next(i))" : "T\(i)"
            let budget = i % 53 == 5 ? "cheap" : "\(next(100_000)).5"
            let day = i % 97 == 11 ? "2025-02-30" : "2025-0\(1 + next(9))-1\(next(10))"
            let name = i % 89 == 3 ? "" : "Trip \(i)"
            text += "\(id),\(name),City \(next(40)),\(day),,\(budget),\(i % 3 == 0),\"note \(i),\tline\"\n"
        }
        return text
    }

    struct Outcome: Equatable {
        var progress: [Int]
        var records: [[Value]]
        var history: [[HistoryChange]]
        var rejects: String
    }

    static func run(_ name: String, text: String, saveEvery: Int, cancelAfter stops: [Int]) async throws -> Outcome {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("depot-pgimport-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("in.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let backend = try await Backends.open(name, entities: [WriteContractTests.trip()])
        do {
            let rejects = folder.appendingPathComponent("rejects.ndjson").path
            var options = ImportOptions(saveEvery: saveEvery, saveInterval: .seconds(3600))
            options.sortRun = 0
            let request = ImportRequest(job: "j", entity: "Trip", path: path, rejectsPath: rejects, options: options)
            for stop in stops {
                await #expect(throws: CancellationError.self) { _ = try await backend.importFile(request, cancelAfter: stop) }
            }
            let p = try await backend.importFile(request, cancelAfter: nil)
            let outcome = Outcome(
                progress: [p.read, p.inserted, p.updated, p.unchanged, p.duplicates, p.rejected, p.skipped],
                records: try await backend.records("Trip"), history: try await backend.history().map(\.changes),
                rejects: try String(contentsOfFile: rejects, encoding: .utf8))
            await backend.close()
            return outcome
        } catch {
            await backend.close()
            throw error
        }
    }

    @Test("the same file gives the same counters, records, history and rejects on both backends")
    func sameImport() async throws {
        let text = Self.generated(3_000)
        let sqlite = try await Self.run("sqlite", text: text, saveEvery: 1_000, cancelAfter: [])
        #expect(sqlite.progress[0] == 3_000)
        #expect(sqlite.progress[5] > 0 && sqlite.progress[1] > 2_000)
        // The counters agree with the history.
        let changes = sqlite.history.joined()
        #expect(changes.filter { $0.kind == .insert }.count == sqlite.progress[1])
        #expect(changes.filter { $0.kind == .update }.count == sqlite.progress[2])
        guard TestServer.available else { return }
        let pg = try await Self.run("postgresql", text: text, saveEvery: 1_000, cancelAfter: [])
        #expect(pg.progress == sqlite.progress)
        #expect(pg.records == sqlite.records)
        #expect(pg.rejects == sqlite.rejects)
        #expect(pg.history.count == sqlite.history.count)
        for (a, b) in zip(pg.history.joined(), sqlite.history.joined()) {
            #expect(a == b)
        }
    }

    @Test("an import cancelled after some saves and run again ends as a clean run, on both backends")
    func resumes() async throws {
        let text = Self.generated(2_500)
        for name in Backends.names {
            let clean = try await Self.run(name, text: text, saveEvery: 500, cancelAfter: [])
            let resumed = try await Self.run(name, text: text, saveEvery: 500, cancelAfter: [1, 3])
            #expect(resumed.progress == clean.progress, "\(name)")
            #expect(resumed.records == clean.records, "\(name)")
            #expect(resumed.rejects == clean.rejects, "\(name)")
            #expect(Array(resumed.history.joined()) == Array(clean.history.joined()), "\(name)")
        }
    }
}
