import ChildProcessSupport
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

    /// A request of job "j" importing `text`, written to a file in `t`'s
    /// folder, in runs of `sortRun` records in memory merged into runs of
    /// `mergeRun`, saves of `saveEvery`; its rejects go to `rejects.ndjson`
    /// in `rejectsFolder` (default: `t`'s folder).
    func request(
        _ text: String, in t: TemporaryStore, sortRun: Int, mergeRun: Int, saveEvery: Int,
        yieldAfter: Duration? = nil, rejectsFolder: URL? = nil
    ) throws -> ImportRequest {
        let path = t.folder.appendingPathComponent("in.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        var options = ImportOptions(saveEvery: saveEvery, saveInterval: .seconds(3600))
        options.sortRun = sortRun
        options.mergeRun = mergeRun
        if let yieldAfter { options.yieldAfter = yieldAfter }
        let rejects = (rejectsFolder ?? t.folder).appendingPathComponent("rejects.ndjson").path
        return ImportRequest(job: "j", entity: "Trip", path: path, rejectsPath: rejects, options: options)
    }

    func importing(
        _ text: String, sortRun: Int, mergeRun: Int = 0, saveEvery: Int,
        cancelAfter stops: [Int] = []
    ) async throws -> (TemporaryStore, ImportProgress, String) {
        let t = try await TemporaryStore()
        let request = try request(text, in: t, sortRun: sortRun, mergeRun: mergeRun, saveEvery: saveEvery)
        for stop in stops {
            #expect(await ImporterTests.run(request, into: t.store, cancellingAfterSave: stop).saves == stop)
        }
        let result = try await Importer.run(request, into: t.store)
        return (t, result, try String(contentsOfFile: request.rejectsPath, encoding: .utf8))
    }

    static let all = FetchDescriptor(entity: "Trip", sort: [.init("id")])

    @Test(
        "sorted runs, in memory or merged from parts spilled to a file (saves ending inside them), store what the file's order stores; counters add up and agree with the history; rejects keep the file's order"
    )
    func sameAsInOrder() async throws {
        let text = Self.generated(5_000, seed: 11)
        let (plain, plainResult, plainRejects) = try await importing(text, sortRun: 0, saveEvery: 2_000)
        // Runs of `run` records in memory, merged from parts of `run` into
        // runs of `merge` (0: not merged), saves of `save`.
        let shapes = [
            (500, 0, 2_000), (2_000, 0, 2_000), (64, 0, 5_000), (1_000, 0, 700),
            (300, 2_000, 700), (64, 5_000, 5_000), (500, 1_600, 2_000), (1_000, 4_000, 450)
        ]
        for (run, merge, save) in shapes {
            let (sorted, result, rejects) = try await importing(text, sortRun: run, mergeRun: merge, saveEvery: save)
            let label = Comment(rawValue: "runs of \(run), merged into \(merge), saves of \(save)")
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
            // Nothing left in the folder but the import's own files: the
            // spill file is unlinked as soon as it is made.
            let left = try FileManager.default.contentsOfDirectory(atPath: sorted.folder.path)
            #expect(!left.contains { $0.hasPrefix(".depot-sort") }, label)
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
        let request = try request(
            text, in: t, sortRun: 20_000, mergeRun: 0, saveEvery: 20_000, yieldAfter: .zero)
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
        return (t, result, try String(contentsOfFile: request.rejectsPath, encoding: .utf8), places)
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

    @Test("a merged run hands out the rows one stable sort of the whole run gives, and skips into that order")
    func mergeIsOneStableSort() throws {
        var rng = SplitMix(seed: 7)
        let columns = ["k", "n", "v"]
        // Keys of mixed kinds (null, numbers, text), many repeated; `v` is
        // the input position, so the order among equal keys shows.
        var batch = RecordBatch(entity: "T", columns: columns)
        for i in 0..<3_000 {
            let key: Value =
                switch rng.next(5) {
                case 0: .null
                case 1: .int(Int64(rng.next(50)) - 25)
                case 2: .double(Double(rng.next(100)) / 4)
                default: .string(String(repeating: "x", count: rng.next(3)) + "\(rng.next(40))")
                }
            batch.append([key, .int(Int64(rng.next(1_000))), .int(Int64(i))])
        }
        func parsed(_ rows: Range<Int>, atEnd: Bool) -> ParsedBatch {
            var part = RecordBatch(entity: "T", columns: columns)
            for r in rows { part.append(Array(batch.values[r * 3..<r * 3 + 3])) }
            return ParsedBatch(
                batch: part, lines: rows.map { $0 + 2 }, rejects: [], read: rows.count,
                endOffset: Int64(rows.upperBound),
                endLine: rows.upperBound + 2, endLineStart: Int64(rows.upperBound), atEnd: atEnd)
        }
        let folder = NSTemporaryDirectory()
        func handedOut(memoryRows: Int, skipping: Int, chunk: Int) throws -> ([[Value]], [Int], ParsedBatch?) {
            var run = MergedRun(
                columns: columns, identifier: ["k"], length: 3_000, memoryRows: memoryRows, folder: folder)
            // Chunks of 37 records: a part holds `memoryRows` or more,
            // up to the chunk that reaches it.
            for from in stride(from: 0, to: 3_000, by: 37) {
                let to = min(from + 37, 3_000)
                try run.append(parsed(from..<to, atEnd: to == 3_000))
            }
            try run.sort()
            try run.skip(skipping)
            var rows: [[Value]] = []
            var lines: [Int] = []
            var last: ParsedBatch?
            while run.hasMore {
                let c = try run.nextChunk(max: chunk)
                for r in 0..<c.batch.count { rows.append(Array(c.batch.values[r * 3..<r * 3 + 3])) }
                lines += c.lines
                #expect(c.runLength == 3_000)
                if c.boundary { last = c }
            }
            return (rows, lines, last)
        }
        // One part: sorted in memory, as SortedRun always did.
        let (whole, wholeLines, wholeEnd) = try handedOut(memoryRows: 3_000, skipping: 0, chunk: 128)
        #expect(whole.count == 3_000 && wholeLines.count == 3_000)
        // Stable: equal keys keep the input's order (`v` ascending).
        for i in 1..<whole.count where whole[i][0] == whole[i - 1][0] {
            guard case .int(let a) = whole[i - 1][2], case .int(let b) = whole[i][2] else { continue }
            #expect(a < b)
        }
        for memoryRows in [1, 7, 250, 333, 1_000] {
            let (merged, lines, end) = try handedOut(memoryRows: memoryRows, skipping: 0, chunk: 100)
            #expect(merged == whole, "parts of \(memoryRows)")
            #expect(lines == wholeLines, "parts of \(memoryRows)")
            #expect(end?.read == 3_000 && end?.endOffset == wholeEnd?.endOffset && end?.atEnd == true)
            // Resumed inside the run: the rows after the ones written.
            for skipping in [1, 999, 2_999] {
                let (rest, _, _) = try handedOut(memoryRows: memoryRows, skipping: skipping, chunk: 64)
                #expect(rest == Array(whole[skipping...]), "parts of \(memoryRows), \(skipping) skipped")
            }
        }
    }

    @Test("an import of merged runs stopped after saves that ended inside runs resumes exactly")
    func mergedResumes() async throws {
        let text = Self.generated(6_000, seed: 29)
        let (clean, cleanResult, cleanRejects) = try await importing(
            text, sortRun: 300, mergeRun: 2_400, saveEvery: 500)
        let (resumed, result, rejects) = try await importing(
            text, sortRun: 300, mergeRun: 2_400, saveEvery: 500, cancelAfter: [1, 3, 6])
        // Where the stops were: inside merged runs (parts of 300, runs of
        // 1,200 and 2,400), the same places as the clean run's saves.
        let t = try await TemporaryStore()
        let request = try request(text, in: t, sortRun: 300, mergeRun: 2_400, saveEvery: 500)
        var places: [String] = []
        for stop in [1, 3, 6] {
            _ = await ImporterTests.run(request, into: t.store, cancellingAfterSave: stop)
            let saved = try #require(await t.store.checkpoint(job: "j"))
            let checkpoint = try #require(ImportCheckpoint.decode(saved))
            places.append("\(checkpoint.runWritten ?? 0) of \(checkpoint.runLength ?? 0)")
            // Inside a run too, the records read are those the counters count.
            let p = checkpoint.progress
            #expect(p.inserted + p.updated + p.unchanged + p.skipped + p.duplicates + p.rejected == p.read)
        }
        // Chunks of 500 of the runs (300, 1,200, 2,400 rows), a save ending
        // once it holds 500: the job's first save holds the first run and
        // 500 of the second; its third, the second's last 200 and 500 of
        // the third; its sixth ends 2,000 into the third.
        #expect(places == ["500 of 1200", "500 of 2400", "2000 of 2400"])
        #expect(result.counters == cleanResult.counters)
        #expect(rejects == cleanRejects)
        try await ImporterTests.expectAgreement(result, resumed.store, job: "j")
        #expect(try await resumed.store.reader.fetch(Self.all) == clean.store.reader.fetch(Self.all))
        func changes(_ s: TemporaryStore) async throws -> [String] {
            try await s.store.reader.history(limit: 1_000).filter { $0.job == "j" }.flatMap(\.changes)
                .map { "\($0.kind) \($0.identifier)" }
        }
        #expect(try await changes(resumed) == changes(clean))
    }

    @Test(
        "a job stopped inside a run by a depotd from before merged runs (no run length in its checkpoint) resumes exactly under merged runs"
    )
    func resumesOldCheckpoint() async throws {
        let text = Self.generated(20_000, seed: 31)
        let (whole, _, wholeRejects) = try await importing(text, sortRun: 20_000, saveEvery: 20_000)
        let t = try await TemporaryStore()
        // The old depotd: runs of 20,000 in memory, a save ended inside the
        // first one (for a waiting save), and its checkpoint knew no run length.
        let stopped = try request(
            text, in: t, sortRun: 20_000, mergeRun: 0, saveEvery: 20_000, yieldAfter: .zero)
        t.store.demand.begin()
        #expect(await ImporterTests.run(stopped, into: t.store, cancellingAfterSave: 3).saves == 3)
        t.store.demand.end()
        let saved = try #require(await t.store.checkpoint(job: "j"))
        var checkpoint = try #require(ImportCheckpoint.decode(saved))
        #expect(checkpoint.runWritten == 3 * 2_048 && checkpoint.runLength == 20_000)
        // As the old depotd wrote it: no run length, and a `read` that
        // counted the run's records only at its end.
        checkpoint.runLength = nil
        checkpoint.progress.read -= 3 * 2_048
        let bytes = try checkpoint.encoded()
        _ = try await t.store.withSave(author: "test", job: nil) { save in
            try await save.setCheckpoint(job: "j", data: bytes)
        }
        // This depotd: merged runs of 1M (the default) from parts of 20,000,
        // on the same file (rewritten, it would be another input).
        var now = stopped
        now.options.mergeRun = ImportOptions.defaultMergeRun
        now.options.yieldAfter = nil
        let result = try await Importer.run(now, into: t.store)
        #expect(try await t.store.reader.fetch(Self.all) == whole.store.reader.fetch(Self.all))
        #expect(try String(contentsOfFile: now.rejectsPath, encoding: .utf8) == wholeRejects)
        #expect(result.read == 20_000)
        try await ImporterTests.expectAgreement(result, t.store, job: "j")
    }

    @Test(
        "a merged run that cannot spill its parts (a full disk) fails the import with disk_full naming the folder; what was saved stays, and the job resumes exactly once there is room",
        .enabled(if: Tmpfs.canMount, "needs root to mount a small tmpfs; not run here"))
    func spillOnAFullDisk() async throws {
        let text = Self.generated(30_000, seed: 41)
        let (clean, _, cleanRejects) = try await importing(text, sortRun: 2_000, mergeRun: 16_000, saveEvery: 2_000)
        // The job's folder (its rejects file, and so the spill file) on a
        // tmpfs of 1 MB: room for the first runs' parts, not the 16,000 of
        // a full run (about 1.7 MB packed).
        let small = try TemporaryStore.makeFolder()
        defer { try? FileManager.default.removeItem(at: small) }
        #expect(Tmpfs.mount(size: "1m", at: small.path))
        defer { Tmpfs.unmount(small.path) }
        let t = try await TemporaryStore()
        let request = try request(
            text, in: t, sortRun: 2_000, mergeRun: 16_000, saveEvery: 2_000, rejectsFolder: small)
        let error = await #expect(throws: DepotError.self) { try await Importer.run(request, into: t.store) }
        #expect(error?.code == .diskFull, "\(error?.message ?? "")")
        #expect(error?.message.contains(small.path) == true, "\(error?.message ?? "")")
        // What was saved stays, its counters agreeing with the history. The
        // parser reads ahead of the saves: when it fills the folder before
        // the first save has written its rejects, that save fails whole and
        // nothing is saved (seen under the full suite's load).
        let count = try await t.store.reader.count(FetchDescriptor(entity: "Trip"))
        if let saved = try await t.store.checkpoint(job: "j") {
            let stopped = try #require(ImportCheckpoint.decode(saved)).progress
            #expect(stopped.read > 0 && !stopped.finished)
            #expect(count == stopped.inserted)
        } else {
            #expect(count == 0)
        }
        // Room again: the job resumes from its last save, exactly.
        #expect(Tmpfs.resize(small.path, to: "64m"))
        let result = try await Importer.run(request, into: t.store)
        #expect(result.read == 30_000)
        try await ImporterTests.expectAgreement(result, t.store, job: "j")
        #expect(try await t.store.reader.fetch(Self.all) == clean.store.reader.fetch(Self.all))
        #expect(try String(contentsOfFile: request.rejectsPath, encoding: .utf8) == cleanRejects)
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
