import Foundation
import Synchronization
import Testing

@testable import DepotEngine

@Suite("Importer")
struct ImporterTests {
    static let csv = #"""
        id,name,destination,startDate,endDate,budget,isFavorite,notes,extra
        a1,Paris trip,Paris,2025-04-01,2025-04-08,1500,true,"Louvre, ""Orsay""",x
        a2,Rome,Rome,2025-05-02,,700.5,false,,x
        a3,Bad budget,Rome,2025-05-02,,cheap,false,,x
        a4,Bad date,Rome,2025-02-30,,1,false,,x
        a5,Short row
        a6,"Line
        break",Oslo,2025-06-01T10:00:00+02:00,,3,1,"",x
        ,No id,Oslo,2025-06-01,,3,1,,x
        a2,Rome again,Rome,2025-05-02,,700.5,false,,x

        """#

    func write(_ text: String, in folder: URL, name: String = "in.csv") throws -> String {
        let path = folder.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("an input of which no record could be read fails, saying why; one good record is enough to succeed")
    func nothingReadable() async throws {
        let t = try await TemporaryStore()
        var garbage: [UInt8] = []
        var rng = SplitMix(seed: 7)
        for _ in 0..<4_000 { garbage.append(UInt8(rng.next(256))) }
        garbage += Array("\n\u{1}\u{2}\n".utf8)
        let cases: [(String, [UInt8], ImportOptions.Format)] = [
            ("garbage.ndjson", garbage, .ndjson),
            ("garbage.json", Array("[".utf8) + garbage, .json),
            (
                "rows.csv",
                Array("id,name,startDate,budget,isFavorite\nx,y,someday,cheap,maybe\nz,w,never,free,no way\n".utf8),
                .csv
            )
        ]
        for (name, bytes, format) in cases {
            let path = t.folder.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let request = ImportRequest(
                job: "j-\(name)", entity: "Trip", path: path,
                rejectsPath: path + ".rejects", options: ImportOptions(format: format))
            let error = await #expect(throws: DepotError.self, "\(name)") {
                try await Importer.run(request, into: t.store)
            }
            #expect(
                error?.message.contains("no record of \(path) could be read: all") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("the first, on line") == true, "\(error?.message ?? "")")
            // Resumed after its last save, the job fails the same way.
            let again = await #expect(throws: DepotError.self) { try await Importer.run(request, into: t.store) }
            #expect(again?.message == error?.message)
        }
        let one = try write(
            "id,name,startDate,budget,isFavorite\nx,y,someday,cheap,maybe\nok,Fine,2025-01-01,1,true\n",
            in: t.folder, name: "one.csv")
        let result = try await Importer.run(
            ImportRequest(job: "j-one", entity: "Trip", path: one, rejectsPath: one + ".rejects"),
            into: t.store)
        #expect(result.inserted == 1 && result.rejected == 1)
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip")) == 1)
    }

    @Test("good records are imported, bad ones rejected one by one with line, field and reason")
    func importsAndRejects() async throws {
        let t = try await TemporaryStore()
        let path = try write(Self.csv, in: t.folder)
        let rejectsPath = t.folder.appendingPathComponent("j1.rejects").path
        let request = ImportRequest(job: "j1", entity: "Trip", path: path, rejectsPath: rejectsPath)
        let result = try await Importer.run(request, into: t.store)
        #expect(result.read == 8)
        #expect(result.inserted == 3)
        #expect(result.duplicates == 1)  // a2 again: the later record won
        #expect(result.updated == 0)
        #expect(result.rejected == 4)
        #expect(result.finished)
        #expect(result.bytesRead == result.bytesTotal)
        let rows = try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", sort: [.init("id")]))
        #expect(rows.rows.map { $0[0] } == ["a1", "a2", "a6"])
        #expect(rows.value("notes", row: 0) == "Louvre, \"Orsay\"")
        #expect(rows.value("endDate", row: 1) == .null)  // empty unquoted: null
        #expect(rows.value("notes", row: 2) == "")  // quoted empty: empty string
        #expect(rows.value("name", row: 2) == "Line\nbreak")
        #expect(rows.value("startDate", row: 2) == "2025-06-01T08:00:00.000Z")
        #expect(rows.value("name", row: 1) == "Rome again")
        let rejects = try String(contentsOfFile: rejectsPath, encoding: .utf8).split(separator: "\n")
        #expect(rejects.count == 4)
        #expect(
            rejects[0]
                == #"{"line":4,"field":"budget","reason":"field \"budget\" is double, but the value is not a number","value":"cheap"}"#
        )
        #expect(rejects[1].contains(#""line":5,"field":"startDate""#))
        #expect(rejects[2].contains(#""line":6,"field":null,"reason":"the record has 2 fields, the header has 9""#))
        #expect(rejects[3].contains(#""line":9,"field":"id""#))
        // Running the finished job again changes nothing and returns its counters.
        let again = try await Importer.run(request, into: t.store)
        #expect(again.counters == result.counters)
        #expect(try await t.store.reader.history().count == 1)
    }

    @Test("importing the same file as a new job changes and logs nothing")
    func reimport() async throws {
        let t = try await TemporaryStore()
        // a2 comes twice, in two versions: only the last one is written, so
        // the second import finds everything equal.
        let path = try write(Self.csv, in: t.folder)
        let first = try await Importer.run(
            ImportRequest(
                job: "j1", entity: "Trip", path: path,
                rejectsPath: t.folder.appendingPathComponent("r1").path),
            into: t.store)
        #expect(first.inserted == 3 && first.duplicates == 1 && first.updated == 0)
        #expect(try await t.store.reader.history().flatMap(\.changes).map(\.kind) == [.insert, .insert, .insert])
        let before = try await t.store.reader.history().count
        let again = try await Importer.run(
            ImportRequest(
                job: "j2", entity: "Trip", path: path,
                rejectsPath: t.folder.appendingPathComponent("r2").path),
            into: t.store)
        #expect(again.inserted == 0 && again.updated == 0)
        #expect(again.unchanged == 3 && again.duplicates == 1)
        #expect(try await t.store.reader.history().count == before)
    }

    @Test("a FIFO or a folder is refused at once, without waiting for a writer")
    func notRegular() async throws {
        let t = try await TemporaryStore()
        let fifo = t.folder.appendingPathComponent("pipe.csv").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [fifo, t.folder.path] {
            let error = await #expect(throws: DepotError.self) {
                try await Importer.run(
                    ImportRequest(
                        job: "f", entity: "Trip", path: path,
                        rejectsPath: t.folder.appendingPathComponent("rf").path), into: t.store)
            }
            #expect(error?.message.contains("not a regular file") == true)
        }
    }

    @Test("a header that does not fit the entity fails the job before anything is written")
    func badHeaders() async throws {
        let t = try await TemporaryStore()
        let noID = try write("name,budget\nx,1\n", in: t.folder, name: "a.csv")
        let error = await #expect(throws: DepotError.self) {
            try await Importer.run(
                ImportRequest(
                    job: "a", entity: "Trip", path: noID,
                    rejectsPath: t.folder.appendingPathComponent("ra").path), into: t.store)
        }
        #expect(error?.message.contains("no column for identifier field \"id\"") == true)
        let unknown = try write("id,budgett\nx,1\n", in: t.folder, name: "b.csv")
        var options = ImportOptions()
        options.refuseUnknownColumns = true
        let unknownError = await #expect(throws: DepotError.self) {
            try await Importer.run(
                ImportRequest(
                    job: "b", entity: "Trip", path: unknown,
                    rejectsPath: t.folder.appendingPathComponent("rb").path,
                    options: options), into: t.store)
        }
        #expect(unknownError?.message.contains("\"budgett\" (did you mean \"budget\"?)") == true)
        let missing = t.folder.appendingPathComponent("nope.csv").path
        let missingError = await #expect(throws: DepotError.self) {
            try await Importer.run(
                ImportRequest(
                    job: "c", entity: "Trip", path: missing,
                    rejectsPath: t.folder.appendingPathComponent("rc").path), into: t.store)
        }
        #expect(missingError?.message.contains("No such file or directory") == true)
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip")) == 0)
    }

    @Test("max_rejects fails the job; what was saved stays")
    func maxRejects() async throws {
        let t = try await TemporaryStore()
        let path = try write(Self.csv, in: t.folder)
        let request = ImportRequest(
            job: "m", entity: "Trip", path: path,
            rejectsPath: t.folder.appendingPathComponent("rm").path,
            options: ImportOptions(maxRejects: .count(2), saveEvery: 4))
        let error = await #expect(throws: DepotError.self) { try await Importer.run(request, into: t.store) }
        #expect(error?.message.contains("the import rejected 4 records, more than max_rejects (2)") == true)
        // Both saves of 4 records committed their good records (a1 and a2,
        // then a6 and a2 again) before the limit was judged after the second.
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip")) == 3)
    }

    /// Runs `request` and cancels it from its own progress callback after save
    /// number `stop`; expects the run to end in cancellation.
    ///
    /// - Returns: the counters of the last save.
    static func run(_ request: ImportRequest, into store: Store, cancellingAfterSave stop: Int) async -> ImportProgress
    {
        let last = Mutex(ImportProgress())
        let run = Task {
            try await Importer.run(request, into: store) { progress in
                last.withLock { $0 = progress }
                if progress.saves >= stop { withUnsafeCurrentTask { $0?.cancel() } }
            }
        }
        let result = await run.result
        #expect(throws: CancellationError.self) { try result.get() }
        return last.withLock { $0 }
    }

    /// A file of `count` generated trips, some ids repeated, some rows bad.
    static func generated(_ count: Int) -> String {
        var text = "id,name,destination,startDate,budget,isFavorite\n"
        for i in 0..<count {
            let id = i % 10 == 9 ? i - 5 : i
            let budget = i % 17 == 3 ? "n/a" : "\(i % 1000).25"
            text +=
                "g\(id),\"Trip \(i), \"\"quoted\"\"\",City \(i % 7),2025-01-\(10 + i % 18),\(budget),\(i % 2 == 0)\n"
        }
        return text
    }

    /// The records of ``generated(_:)`` as a JSON array, each element over two lines.
    static func generatedJSONArray(_ count: Int) -> String {
        var elements: [String] = []
        for i in 0..<count {
            let id = i % 10 == 9 ? i - 5 : i
            let budget = i % 17 == 3 ? "\"n/a\"" : "\(i % 1000).25"
            elements.append(
                "{\"id\": \"g\(id)\", \"name\": \"Trip \(i), \\\"quoted\\\"\",\n \"destination\": \"City \(i % 7)\", "
                    + "\"startDate\": \"2025-01-\(10 + i % 18)\", \"budget\": \(budget), \"isFavorite\": \(i % 2 == 0)}"
            )
        }
        return "[" + elements.joined(separator: ",\n") + "]\n"
    }

    @Test("an import cancelled after a save resumes exactly: same records, history and counters as one run")
    func resumeIsExact() async throws {
        let clean = try await TemporaryStore()
        let resumed = try await TemporaryStore()
        let text = Self.generated(500)
        let cleanPath = try write(text, in: clean.folder)
        let resumedPath = try write(text, in: resumed.folder)
        let options = ImportOptions(saveEvery: 37)
        let cleanResult = try await Importer.run(
            ImportRequest(
                job: "j", entity: "Trip", path: cleanPath,
                rejectsPath: clean.folder.appendingPathComponent("r").path, options: options),
            into: clean.store)
        let request = ImportRequest(
            job: "j", entity: "Trip", path: resumedPath,
            rejectsPath: resumed.folder.appendingPathComponent("r").path, options: options)
        // Interrupt three times, each after a few more saves: the progress
        // callback runs in the import's task after a save commits, so
        // cancelling there stops the job at exactly that save boundary.
        for stopAfter in [1, 3, 6] {
            let interrupted = await Self.run(request, into: resumed.store, cancellingAfterSave: stopAfter)
            #expect(interrupted.saves == stopAfter)
        }
        let resumedResult = try await Importer.run(request, into: resumed.store)
        #expect(cleanResult.counters == resumedResult.counters)
        let cleanRows = try await clean.store.reader.fetch(FetchDescriptor(entity: "Trip", sort: [.init("id")]))
        let resumedRows = try await resumed.store.reader.fetch(FetchDescriptor(entity: "Trip", sort: [.init("id")]))
        #expect(cleanRows == resumedRows)
        let cleanChanges = try await clean.store.reader.history(limit: 10_000).flatMap(\.changes)
        let resumedChanges = try await resumed.store.reader.history(limit: 10_000).flatMap(\.changes)
        #expect(cleanChanges == resumedChanges)
        #expect(
            try String(contentsOfFile: clean.folder.appendingPathComponent("r").path, encoding: .utf8)
                == String(contentsOfFile: resumed.folder.appendingPathComponent("r").path, encoding: .utf8))
    }

    @Test("a job whose input changed since it started fails with that reason")
    func changedInput() async throws {
        let t = try await TemporaryStore()
        let path = try write(Self.generated(100), in: t.folder)
        let request = ImportRequest(
            job: "c", entity: "Trip", path: path,
            rejectsPath: t.folder.appendingPathComponent("r").path,
            options: ImportOptions(saveEvery: 10))
        #expect(await Self.run(request, into: t.store, cancellingAfterSave: 1).saves == 1)
        _ = try write(Self.generated(120), in: t.folder)
        let error = await #expect(throws: DepotError.self) { try await Importer.run(request, into: t.store) }
        #expect(error?.message.contains("changed since job c started") == true)
    }

    /// The insert and update changes that job `job`'s history transactions hold.
    static func logged(_ store: Store, job: String) async throws -> (inserts: Int, updates: Int) {
        let changes = try await store.reader.history(limit: 100_000).filter { $0.job == job }.flatMap(\.changes)
        return (changes.filter { $0.kind == .insert }.count, changes.filter { $0.kind == .update }.count)
    }

    /// Counters that add up and agree with the history (DESIGN §3).
    static func expectAgreement(
        _ result: ImportProgress, _ store: Store, job: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let sum =
            result.inserted + result.updated + result.unchanged + result.skipped + result.duplicates + result.rejected
        #expect(sum == result.read, "counters add up to the records read", sourceLocation: sourceLocation)
        let logged = try await logged(store, job: job)
        #expect(result.inserted == logged.inserts, "inserted agrees with the history", sourceLocation: sourceLocation)
        #expect(result.updated == logged.updates, "updated agrees with the history", sourceLocation: sourceLocation)
    }

    @Test(
        "in-file duplicates: superseded in the same save they are duplicates, never written; a repeat in a later save counts as what it did; the counters agree with the history"
    )
    func duplicatesNearAndFar() async throws {
        let text =
            "id,name,startDate,budget,isFavorite\n"
            + "x,One,2025-01-01,1,true\nold,Changed,2025-01-01,1,false\ny,Two,2025-01-01,2,true\n"
            + "x,One again,2025-01-01,1,true\nx,One again,2025-01-01,1,true\n"
        // (save size, policy) → (inserted, updated, unchanged, skipped, duplicates)
        let cases: [(Int, ConflictPolicy, [Int])] = [
            // Saves [x old] [y x'] [x']: x' updates x, then is unchanged.
            (2, .upsert, [2, 2, 1, 0, 0]), (2, .replace, [2, 2, 1, 0, 0]), (2, .skip, [2, 0, 0, 3, 0]),
            // One save: the first two x are superseded by the last, never written.
            (100, .upsert, [2, 1, 0, 0, 2]), (100, .replace, [2, 1, 0, 0, 2]), (100, .skip, [2, 0, 0, 3, 0])
        ]
        for (saveEvery, policy, expected) in cases {
            let s = try await TemporaryStore()
            try await s.insertTrips([["old", "Before the job", nil, "2025-01-01", nil, 1.0, false, nil]])
            let path = try write(text, in: s.folder)
            // Runs as long as a save (not merged runs, which saves end
            // inside of): each save is one run, so the saves above hold
            // the records they say, sorted.
            var options = ImportOptions(onConflict: policy, saveEvery: saveEvery)
            options.mergeRun = 0
            let result = try await Importer.run(
                ImportRequest(
                    job: "d", entity: "Trip", path: path, rejectsPath: s.folder.appendingPathComponent("r").path,
                    options: options), into: s.store)
            #expect(result.read == 5)
            #expect(
                [result.inserted, result.updated, result.unchanged, result.skipped, result.duplicates] == expected,
                "save every \(saveEvery), \(policy)")
            try await Self.expectAgreement(result, s.store, job: "d")
            let names = try await s.store.reader.fetch(
                FetchDescriptor(entity: "Trip", sort: [.init("id")], fields: ["name"]))
            let last: [Value] = policy == .skip ? ["Before the job", "One", "Two"] : ["Changed", "One again", "Two"]
            #expect(names.rows.map { $0[0] } == last)
        }
        let t = try await TemporaryStore()
        try await t.insertTrips([["old", "Before the job", nil, "2025-01-01", nil, 1.0, false, nil]])
        let path = try write(text, in: t.folder)
        let failing = await #expect(throws: DepotError.self) {
            try await Importer.run(
                ImportRequest(
                    job: "f", entity: "Trip", path: path,
                    rejectsPath: t.folder.appendingPathComponent("rf").path,
                    options: ImportOptions(onConflict: .fail, saveEvery: 2)), into: t.store)
        }
        #expect(failing?.message.contains("already exists") == true)
    }

    static let ndjson = """
        {"id": "n1", "name": "Paris", "startDate": "2025-04-01T10:00:00+02:00", "budget": 1500, "isFavorite": true, "notes": "a \\"quote\\""}
        {"id": "n2", "name": "Rome", "startDate": "2025-05-02", "budget": "700.5", "isFavorite": false, "unknown": [1]}
        {"id": "n3", "name": "Bad", "startDate": "2025-05-02", "budget": true, "isFavorite": false}
        {"id": "n4", "startDate": "2025-05-02", "budget": 1, "isFavorite": false}
        {"id": "n5", "name": "Broken", "budget": 1,
        {"id": 6, "name": "Number id", "startDate": "2025-05-02", "budget": 1e2, "isFavorite": "yes", "destination": null}

        """

    @Test("NDJSON: values convert by field type; bad records rejected with line, field and reason")
    func importsNDJSON() async throws {
        let t = try await TemporaryStore()
        let path = try write(Self.ndjson, in: t.folder, name: "in.ndjson")
        let rejectsPath = t.folder.appendingPathComponent("r").path
        let result = try await Importer.run(
            ImportRequest(
                job: "n", entity: "Trip", path: path, rejectsPath: rejectsPath,
                options: ImportOptions(format: .ndjson)), into: t.store)
        #expect(result.read == 6 && result.inserted == 3 && result.rejected == 3)
        let rows = try await t.store.reader.fetch(FetchDescriptor(entity: "Trip", sort: [.init("id")]))
        #expect(rows.rows.map { $0[0] } == ["6", "n1", "n2"])
        #expect(rows.value("startDate", row: 1) == "2025-04-01T08:00:00.000Z")
        #expect(rows.value("notes", row: 1) == "a \"quote\"")
        #expect(rows.value("budget", row: 2) == 700.5)
        #expect(rows.value("budget", row: 0) == 100.0)
        #expect(rows.value("isFavorite", row: 0) == true)
        let rejects = try String(contentsOfFile: rejectsPath, encoding: .utf8).split(separator: "\n")
        #expect(
            rejects[0]
                == #"{"line":3,"field":"budget","reason":"field \"budget\" is double, but the value is a JSON boolean","value":"true"}"#
        )
        #expect(rejects[1] == #"{"line":4,"field":"name","reason":"required field \"name\" is null or missing"}"#)
        #expect(
            rejects[2]
                == #"{"line":5,"field":null,"reason":"invalid JSON at line 5, column 44: the object is not closed"}"#)
    }

    @Test("a JSON array of objects imports like NDJSON; json fields keep their JSON; unknown keys can be refused")
    func importsArray() async throws {
        let t = try await TemporaryStore(entities: [
            TemporaryStore.tripEntity(extraFields: [
                Field(name: "tags", type: .json, isOptional: true)
            ])
        ])
        let text = """
            [{"id": "j1", "name": "A", "startDate": "2025-01-01", "budget": 1, "isFavorite": true,
              "tags": {"k": ["x", 2, null]}},
             {"id": "j2", "name": "B", "startDate": "2025-01-01", "budget": 1, "isFavorite": true, "tags": "plain"},
             {"id": "j3", "name": "C", "startDate": "2025-01-01", "budget": 1, "isFavorite": true, "budgett": 2}]
            """
        let path = try write(text, in: t.folder, name: "in.json")
        var options = ImportOptions(format: .json)
        options.refuseUnknownColumns = true
        let rejectsPath = t.folder.appendingPathComponent("r").path
        let result = try await Importer.run(
            ImportRequest(job: "a", entity: "Trip", path: path, rejectsPath: rejectsPath, options: options),
            into: t.store)
        #expect(result.inserted == 2 && result.rejected == 1)
        let rows = try await t.store.reader.fetch(
            FetchDescriptor(entity: "Trip", sort: [.init("id")], fields: ["tags"]))
        #expect(rows.rows.map { $0[0] } == [#"{"k": ["x", 2, null]}"#, #""plain""#])
        let rejects = try String(contentsOfFile: rejectsPath, encoding: .utf8)
        #expect(
            rejects.contains(
                #""line":4,"field":"budgett","reason":"\"budgett\" is not a field of \"Trip\" (did you mean \"budget\"?)""#
            ))
    }

    @Test("a JSON array import cancelled after saves resumes exactly")
    func resumeJSONArray() async throws {
        let text = Self.generatedJSONArray(300)
        let clean = try await TemporaryStore()
        let resumed = try await TemporaryStore()
        let options = ImportOptions(format: .json, saveEvery: 23)
        let cleanResult = try await Importer.run(
            ImportRequest(
                job: "j", entity: "Trip", path: try write(text, in: clean.folder, name: "in.json"),
                rejectsPath: clean.folder.appendingPathComponent("r").path, options: options),
            into: clean.store)
        let request = ImportRequest(
            job: "j", entity: "Trip", path: try write(text, in: resumed.folder, name: "in.json"),
            rejectsPath: resumed.folder.appendingPathComponent("r").path, options: options)
        for stopAfter in [2, 5] {
            #expect(await Self.run(request, into: resumed.store, cancellingAfterSave: stopAfter).saves == stopAfter)
        }
        let resumedResult = try await Importer.run(request, into: resumed.store)
        #expect(cleanResult.counters == resumedResult.counters)
        // Every 10th record repeats the id of the 5th before it: the counters,
        // whether the repeat lands in the same save or a later one, and
        // whether the job ran in one go or was resumed, agree with the history.
        #expect(cleanResult.rejected == 18)
        #expect(cleanResult.duplicates > 0 && cleanResult.updated + cleanResult.unchanged > 0)
        try await Self.expectAgreement(cleanResult, clean.store, job: "j")
        try await Self.expectAgreement(resumedResult, resumed.store, job: "j")
        let all = FetchDescriptor(entity: "Trip", sort: [.init("id")])
        #expect(try await clean.store.reader.fetch(all) == resumed.store.reader.fetch(all))
        #expect(
            try await clean.store.reader.history(limit: 10_000).flatMap(\.changes)
                == resumed.store.reader.history(limit: 10_000).flatMap(\.changes))
        #expect(
            try String(contentsOfFile: clean.folder.appendingPathComponent("r").path, encoding: .utf8)
                == String(contentsOfFile: resumed.folder.appendingPathComponent("r").path, encoding: .utf8))
    }

    @Test("progress as an AsyncSequence: one event per save, the last one finished")
    func events() async throws {
        let t = try await TemporaryStore()
        let path = try write(Self.generated(100), in: t.folder)
        var seen: [ImportProgress] = []
        for try await p in Importer.events(
            ImportRequest(
                job: "e", entity: "Trip", path: path,
                rejectsPath: t.folder.appendingPathComponent("r").path,
                options: ImportOptions(saveEvery: 25)), into: t.store)
        {
            seen.append(p)
        }
        // 100 records in saves of 25, inside one sorted run whose last
        // chunk is the input's end: four saves.
        // (A save that takes over a second, on a loaded machine, has the
        // ticker repeat the progress before it, the first save's the
        // progress of none: each save once, in order.)
        var saves: [Int] = []
        for p in seen where saves.last != p.saves && p.saves > 0 { saves.append(p.saves) }
        #expect(seen.allSatisfy { $0.saves > 0 || $0.read == 0 })
        #expect(saves == Array(1...4))
        #expect(seen.last?.finished == true)
        #expect(seen.last?.read == 100)
    }

    @Test("while no save ends, the ticker repeats the last progress with a newer elapsed time")
    func ticker() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: ImportProgress.self)
        let started = ContinuousClock.now
        let ticker = ProgressTicker(started: started) { continuation.yield($0) }
        var p = ImportProgress()
        p.read = 42
        p.saves = 1
        ticker.update(p)
        let task = Task { await ticker.run() }
        var iterator = stream.makeAsyncIterator()
        let event = await iterator.next()
        task.cancel()
        #expect(event?.read == 42 && event?.saves == 1)
        #expect((event?.elapsed ?? 0) >= 0.9)
    }
}

extension ImportProgress {
    /// The progress without its timings, which differ from run to run.
    var counters: ImportProgress {
        var c = self
        c.elapsed = 0
        c.lastSaveSeconds = nil
        return c
    }
}
