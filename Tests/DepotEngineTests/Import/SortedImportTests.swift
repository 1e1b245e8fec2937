import Foundation
import Testing

@testable import DepotEngine

/// Imports write each run of records in identifier order (SortedRun), which
/// must change nothing a user sees but the speed.
@Suite("Importer: sorted runs")
struct SortedImportTests {
    /// `count` trips with random ids; every 7th repeats an earlier id with
    /// other values, every 53rd has a bad budget, every 97th a bad date.
    static func generated(_ count: Int, seed: UInt64) -> String {
        var rng = SplitMix(seed: seed)
        var ids: [String] = []
        var text = "id,name,destination,startDate,endDate,budget,isFavorite,notes\n"
        for i in 0..<count {
            let id: String
            if i % 7 == 6, !ids.isEmpty {
                id = ids[rng.next(ids.count)]
            } else {
                id = String(format: "%08x-%04x", rng.next(1 << 32), rng.next(1 << 16))
                ids.append(id)
            }
            let budget = i % 53 == 5 ? "cheap" : "\(rng.next(100_000)).5"
            let day = i % 97 == 11 ? "2025-02-30" : "2025-0\(1 + rng.next(9))-1\(rng.next(10))"
            text += "\(id),Trip \(i),City \(rng.next(40)),\(day),,\(budget),\(i % 3 == 0),\"note \(i), line \(i)\"\n"
        }
        return text
    }

    func importing(
        _ text: String, sortRun: Int, saveEvery: Int,
        cancelAfter stops: [Int] = []
    ) async throws -> (TemporaryStore, ImportProgress, String) {
        let t = try await TemporaryStore()
        let path = t.folder.appendingPathComponent("in.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        var options = ImportOptions(saveEvery: saveEvery, saveInterval: .seconds(3600))
        options.sortRun = sortRun
        let rejects = t.folder.appendingPathComponent("rejects.ndjson").path
        let request = ImportRequest(job: "j", entity: "Trip", path: path, rejectsPath: rejects, options: options)
        for stop in stops {
            #expect(await ImporterTests.run(request, into: t.store, cancellingAfterSave: stop).saves == stop)
        }
        let result = try await Importer.run(request, into: t.store)
        return (t, result, try String(contentsOfFile: rejects, encoding: .utf8))
    }

    static let all = FetchDescriptor(entity: "Trip", sort: [.init("id")])

    @Test(
        "sorted runs store what the file's order stores; counters add up and agree with the history; rejects keep the file's order"
    )
    func sameAsInOrder() async throws {
        let text = Self.generated(5_000, seed: 11)
        let (plain, plainResult, plainRejects) = try await importing(text, sortRun: 0, saveEvery: 2_000)
        for (run, save) in [(500, 2_000), (2_000, 2_000), (64, 5_000), (1_000, 700)] {
            let (sorted, result, rejects) = try await importing(text, sortRun: run, saveEvery: save)
            let label = Comment(rawValue: "runs of \(run), saves of \(save)")
            #expect(try await sorted.store.reader.fetch(Self.all) == plain.store.reader.fetch(Self.all), label)
            #expect(
                result.read == 5_000 && result.inserted == plainResult.inserted
                    && result.rejected == plainResult.rejected, label)
            #expect(
                result.updated + result.unchanged + result.duplicates
                    == plainResult.updated + plainResult.unchanged + plainResult.duplicates, label)
            try await ImporterTests.expectAgreement(result, sorted.store, job: "j")
            // The same rejects, in the file's order.
            #expect(rejects == plainRejects, label)
            let lines = rejects.split(separator: "\n").map { line -> Int in
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return object?["line"] as? Int ?? -1
            }
            #expect(lines == lines.sorted() && lines.count == result.rejected && !lines.isEmpty, label)
        }
        try await ImporterTests.expectAgreement(plainResult, plain.store, job: "j")
    }

    @Test("each run is written in identifier order, the last of a repeated identifier winning")
    func writtenInOrder() async throws {
        let text = Self.generated(1_200, seed: 5)
        let (t, result, _) = try await importing(text, sortRun: 400, saveEvery: 400)
        #expect(result.read == 1_200)
        // The history of each save lists its inserts in the order written
        // (a run of 400 records a save, then one that only ends the job).
        let saves = try await t.store.reader.history(limit: 100).filter { $0.job == "j" }
        #expect(saves.count == 3)
        var insertedBefore = Set<String>()
        for save in saves {
            let inserted = save.changes.filter { $0.kind == .insert }.map { $0.identifier }
            #expect(inserted.count > 300)
            #expect(
                inserted == inserted.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) },
                "written in identifier order")
            #expect(insertedBefore.isDisjoint(with: inserted))
            insertedBefore.formUnion(inserted)
        }
        // In input order, a run's inserts come in the file's (random) order.
        let (plain, _, _) = try await importing(text, sortRun: 0, saveEvery: 400)
        let first = try await plain.store.reader.history(limit: 100).first { $0.job == "j" }
        let inserted = first?.changes.filter { $0.kind == .insert }.map { $0.identifier } ?? []
        #expect(inserted != inserted.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    @Test("a sorted import cancelled after saves resumes exactly: same records, history and counters as one run")
    func resumes() async throws {
        let text = Self.generated(3_000, seed: 23)
        let (clean, cleanResult, cleanRejects) = try await importing(text, sortRun: 250, saveEvery: 500)
        let (resumed, result, rejects) = try await importing(text, sortRun: 250, saveEvery: 500, cancelAfter: [2, 4])
        #expect(result.counters == cleanResult.counters)
        #expect(rejects == cleanRejects)
        #expect(try await resumed.store.reader.fetch(Self.all) == clean.store.reader.fetch(Self.all))
        func changes(_ s: TemporaryStore) async throws -> [String] {
            try await s.store.reader.history(limit: 100).filter { $0.job == "j" }.flatMap(\.changes)
                .map { "\($0.kind) \($0.identifier)" }
        }
        #expect(try await changes(resumed) == changes(clean))
    }

    /// Imports `text` as one sorted run whose saves each end after one
    /// chunk (2,048 records), inside the run, for a save kept waiting all
    /// along; cancelled after each of `stops` saves, then resumed.
    ///
    /// - Returns: the store, the result, the rejects, and where in the run
    ///   each stop's checkpoint was (rows of the run written).
    func importingInsideRun(_ text: String, cancelAfter stops: [Int] = []) async throws -> (
        TemporaryStore, ImportProgress, String, [Int]
    ) {
        let t = try await TemporaryStore()
        let path = t.folder.appendingPathComponent("in.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        var options = ImportOptions(saveEvery: 20_000, saveInterval: .seconds(3600))
        options.sortRun = 20_000
        options.yieldAfter = .zero
        let rejects = t.folder.appendingPathComponent("rejects.ndjson").path
        let request = ImportRequest(job: "j", entity: "Trip", path: path, rejectsPath: rejects, options: options)
        t.store.demand.begin()
        defer { t.store.demand.end() }
        var places: [Int] = []
        for stop in stops {
            let stopped = await ImporterTests.run(request, into: t.store, cancellingAfterSave: stop)
            #expect(stopped.saves == stop)
            let saved = try #require(await t.store.checkpoint(job: "j"))
            let checkpoint = try #require(ImportCheckpoint.decode(saved))
            places.append(checkpoint.runWritten ?? 0)
        }
        let result = try await Importer.run(request, into: t.store)
        return (t, result, try String(contentsOfFile: rejects, encoding: .utf8), places)
    }

    @Test(
        "an import that ends its saves inside a sorted run for a waiting save, stopped there, resumes exactly inside the run"
    )
    func resumesInsideRun() async throws {
        let text = Self.generated(20_000, seed: 31)
        // The run written whole, in one save (and one that only ends the job).
        let (whole, wholeResult, wholeRejects) = try await importing(text, sortRun: 20_000, saveEvery: 20_000)
        #expect(wholeResult.saves == 2)
        // Its chunks saved one by one, without a stop.
        let (clean, cleanResult, cleanRejects, _) = try await importingInsideRun(text)
        #expect(cleanResult.saves == 11, "a save a chunk, and one that only ends the job")
        // The same, stopped inside the run three times.
        let (resumed, result, rejects, places) = try await importingInsideRun(text, cancelAfter: [2, 3, 5])
        #expect(places == [2 * 2_048, 3 * 2_048, 5 * 2_048], "each stop's checkpoint was inside the run")
        // Exactly once: what the uninterrupted import with the same saves did.
        #expect(result.counters == cleanResult.counters)
        #expect(rejects == cleanRejects)
        try await ImporterTests.expectAgreement(result, resumed.store, job: "j")
        func changes(_ s: TemporaryStore) async throws -> [String] {
            try await s.store.reader.history(limit: 1_000).filter { $0.job == "j" }.flatMap(\.changes)
                .map { "\($0.kind) \($0.identifier)" }
        }
        #expect(try await changes(resumed) == changes(clean))
        // And the records of the run written whole; its rejects too (the
        // file's records refused while parsing, carried by the run's end).
        #expect(try await resumed.store.reader.fetch(Self.all) == whole.store.reader.fetch(Self.all))
        #expect(rejects == wholeRejects)
        #expect(result.read == wholeResult.read && result.rejected == wholeResult.rejected)
    }

    @Test(
        "records of an entity that refers to itself keep the file's order, so that a reference to an earlier record holds"
    )
    func selfReferenceKeepsOrder() async throws {
        let employee = EntityDeclaration(
            name: "Employee", fields: [Field(name: "id", type: .string), Field(name: "name", type: .string)],
            identifier: ["id"],
            relationships: [Relationship(name: "manager", target: "Employee", kind: .toOne(required: false))])
        let t = try await TemporaryStore(entities: try EntityDeclaration.resolve([employee]))
        // Each employee's manager comes earlier in the file but sorts later.
        var text = "id,name,manager\nz0,Boss,\n"
        for i in 1..<200 { text += "z\(999 - i),E\(i),\(i == 1 ? "z0" : "z\(1000 - i)")\n" }
        let path = t.folder.appendingPathComponent("e.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        var options = ImportOptions(saveEvery: 1_000)
        options.sortRun = 1_000
        let result = try await Importer.run(
            ImportRequest(
                job: "e", entity: "Employee", path: path, rejectsPath: t.folder.appendingPathComponent("r").path,
                options: options), into: t.store)
        #expect(result.inserted == 200 && result.rejected == 0)
    }

    @Test(
        "after a short first run, runs grow fourfold to their full length; a job resumed where a run ended goes on as the clean one"
    )
    func growingRuns() {
        // The clean job's runs, from its start.
        var clean: [Int] = []
        var read = 0
        while read < 2_000 {
            let length = ParserThread.runLength(after: read, first: 16, full: 300)
            clean.append(length)
            read += length
        }
        #expect(Array(clean.prefix(5)) == [16, 64, 256, 300, 300])
        // Resumed at each place a run ended: the runs from there are the clean job's.
        var boundary = 0
        for (k, length) in clean.enumerated() {
            boundary += length
            #expect(
                ParserThread.runLength(after: boundary, first: 16, full: 300) == (clean.dropFirst(k + 1).first ?? 300))
        }
        // Without a short first run, every run is full.
        #expect(ParserThread.runLength(after: 0, first: 300, full: 300) == 300)
        #expect(ParserThread.runLength(after: 17, first: 16, full: 300) == 300)
    }
}
