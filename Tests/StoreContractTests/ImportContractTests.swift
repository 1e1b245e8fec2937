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

    /// `text` imported on backend `name` (cancelled after each of `stops`
    /// saves and run again), into a store where `existing` was saved first.
    ///
    /// - Parameter insideRuns: the file read as one sorted run, written in
    ///   chunks of that many records, each save ending after one chunk
    ///   (inside the run) for a save kept waiting all along.
    static func run(
        _ name: String, text: String, saveEvery: Int, cancelAfter stops: [Int],
        existing: [[Value]] = [], insideRuns chunk: Int? = nil
    ) async throws -> Outcome {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "depot-pgimport-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("in.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let backend = try await Backends.open(name, entities: [WriteContractTests.trip()])
        do {
            if !existing.isEmpty { _ = try await backend.write(WriteContractTests.batch(existing)) }
            let rejects = folder.appendingPathComponent("rejects.ndjson").path
            var options = ImportOptions(saveEvery: saveEvery, saveInterval: .seconds(3600))
            options.sortRun = 0
            if let chunk {
                options.sortRun = saveEvery
                options.mergeRun = 0
                options.chunkRows = chunk
                options.yieldAfter = .zero
                backend.contract.settings.demand.begin()
            }
            defer { if chunk != nil { backend.contract.settings.demand.end() } }
            let request = ImportRequest(job: "j", entity: "Trip", path: path, rejectsPath: rejects, options: options)
            for stop in stops {
                await #expect(throws: CancellationError.self) {
                    _ = try await backend.importFile(request, cancelAfter: stop)
                }
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

    @Test(
        "an import whose saves end inside a sorted run for a waiting save, stopped there, resumes exactly inside the run, alike on both backends"
    )
    func insideRuns() async throws {
        let text = Self.generated(6_000)
        var answers: [(String, Outcome)] = []
        for name in Backends.names {
            let clean = try await Self.run(name, text: text, saveEvery: 6_000, cancelAfter: [], insideRuns: 500)
            // A save a chunk of 500: about 6,000 good records make a dozen saves or more.
            #expect(clean.history.count >= 11, "\(name): \(clean.history.count) saves")
            let resumed = try await Self.run(
                name, text: text, saveEvery: 6_000, cancelAfter: [2, 3, 7], insideRuns: 500)
            #expect(resumed == clean, "\(name): stopped three times inside the run, as the uninterrupted import")
            answers.append((name, resumed))
        }
        // The saves differ between the backends (a PostgreSQL import's first
        // runs are short), and so do the counters of repeated records; what
        // is stored does not.
        let whole = try await Self.run("sqlite", text: text, saveEvery: 6_000, cancelAfter: [])
        for (name, outcome) in answers {
            #expect(outcome.records == whole.records, "\(name): the records of the run written in one save")
            #expect(outcome.rejects == whole.rejects, "\(name)")
        }
    }

    @Test(
        "an import into a store that holds some of its records already, late in the file or without a required field: the same outcome on both backends"
    )
    func storedBefore() async throws {
        // A PostgreSQL import copies the records whose keys the job has not
        // given as new ones, without a lookup: a stored one fails that COPY,
        // which is done again with every key looked up.
        // The first saves go by the guess; the one that meets T1500 is done
        // again, and the rest of the job looks every key up.
        let existing = ["T2998", "T1500"].map { WriteContractTests.row($0, "Stored before", budget: 1) }
        let cases = [(Self.generated(3_000), 2, 0), ("id,budget\nT2998,5.5\nX1,6.5\nT1500,1\n", 1, 1)]
        for (text, updated, rejected) in cases {
            var answers: [(String, Outcome)] = []
            for name in Backends.names {
                answers.append(
                    (name, try await Self.run(name, text: text, saveEvery: 1_000, cancelAfter: [], existing: existing)))
            }
            // Each stored record is updated (T1500 to the budget it holds:
            // unchanged), none inserted again; X1 lacks a name.
            #expect(
                answers[0].1.progress[2] >= updated && answers[0].1.progress[5] >= rejected, "\(answers[0].1.progress)")
            #expect(
                answers[0].1.history.dropFirst().joined().filter { $0.kind == .insert && $0.identifier == #""T1500""# }
                    .isEmpty)
            for (name, outcome) in answers.dropFirst() {
                #expect(outcome.progress == answers[0].1.progress, "\(name)")
                #expect(outcome.records == answers[0].1.records, "\(name)")
                #expect(outcome.rejects == answers[0].1.rejects, "\(name)")
                #expect(Array(outcome.history.joined()) == Array(answers[0].1.history.joined()), "\(name)")
            }
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
