import Foundation
import Testing

@testable import DepotEngine

/// Schema inference (DESIGN §18): dialect, types with their evidence,
/// nulls, names and identifier candidates, from whole files.
@Suite("Infer: schema from a file")
struct InferTests {
    static func write(_ text: String, name: String = "data.csv") throws -> String {
        try write(Array(text.utf8), name: name)
    }

    /// Where the tests' files go: one folder for the test process, removed
    /// when it exits (each file in a folder of its own within, under the
    /// name it is given).
    static let root: URL = {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("depot-infer-tests-\(getpid())")
        atexit { try? FileManager.default.removeItem(at: InferTests.root) }
        return root
    }()

    static func write(_ bytes: [UInt8], name: String) throws -> String {
        let folder = root.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    static func field(_ i: Inference, _ name: String) throws -> Inference.InferredField {
        try #require(i.fields.first { $0.name == name }, "no field \(name) in \(i.fields.map(\.name))")
    }

    @Test("types from the whole file: an int column widened at line 1,502 says where and by what")
    func lateWidening() throws {
        var text = "id,qty,price,day,flag,code,doc\n"
        for k in 1...1_500 {
            text += "\(k),\(k % 7),\(k),2025-01-\(String(format: "%02d", k % 28 + 1)),\(k % 2 == 0 ? "true" : "false"),"
            text += "\(String(format: "%03d", k % 50)),\"{\"\"k\"\": \(k)}\"\n"
        }
        text += "1501,3,1.5,2025-02-01,false,7,[1]\n"
        text += "1502,x,2,2025-02-02,true,8,[]\n"
        let i = try SchemaInference.infer(path: try Self.write(text, name: "orders.csv"))
        #expect(i.entity == "Orders" && i.format == .csv && i.rows == 1_502)
        #expect(i.dialect?.delimiter == UInt8(ascii: ",") && i.dialect?.header == true)
        let qty = try Self.field(i, "qty")
        #expect(qty.declaration == "string")
        #expect(qty.evidence?.type == .int && qty.evidence?.line == 1_503 && qty.evidence?.value == "x")
        let price = try Self.field(i, "price")
        #expect(price.declaration == "double" && price.evidence?.line == 1_502 && price.evidence?.value == "1.5")
        #expect(try Self.field(i, "day").declaration == "date")
        #expect(try Self.field(i, "flag").declaration == "bool")
        // Leading zeros keep a code a string.
        #expect(try Self.field(i, "code").declaration == "string")
        #expect(try Self.field(i, "doc").declaration == "json")
        #expect(try i.identifier == ["id"] && Self.field(i, "id").declaration == "int")
        let toml = i.toml()
        #expect(toml.contains(#"qty   = "string"  # int until line 1,503 ("x")"#), "\(toml)")
        #expect(toml.contains(#"identifier = "id""#))
        let json = i.json()
        #expect(json.contains(#""evidence": {"qty": {"type": "int", "line": 1503, "value": "x"}"#), "\(json)")
    }

    @Test("nulls: empty cells make a field optional; NA, N/A and - are nulls of a typed field and values of text")
    func nulls() throws {
        let text = "id,score,label\n1,5,a\n2,NA,NA\n3,,b\n4,-,-\n5,7,\n6,N/A,c\n"
        let i = try SchemaInference.infer(path: try Self.write(text))
        let score = try Self.field(i, "score")
        #expect(score.declaration == "int?")
        #expect(score.nulls == ["": 1, "NA": 1, "-": 1, "N/A": 1])
        let label = try Self.field(i, "label")
        #expect(label.declaration == "string?" && label.nulls == ["": 1])
        #expect(i.nullSpellings == ["-", "N/A", "NA"])
        #expect(i.json().contains(#""nulls": {"score": {"": 1, "-": 1, "N/A": 1, "NA": 1}, "label": {"": 1}}"#))
    }

    @Test("dialects: ; tab | delimiters, ' quotes, spaces after delimiters, a file without a header")
    func dialects() throws {
        let semi = try SchemaInference.infer(
            path: try Self.write("name;amount;city\n\"Doe; J\";1,5;Paris\nRoe;2,25;\"Rome\"\n"))
        #expect(semi.dialect?.delimiter == UInt8(ascii: ";") && semi.rows == 2, "\(semi.toml())")
        #expect(try Self.field(semi, "amount").declaration == "string")
        let tab = try SchemaInference.infer(path: try Self.write("a\tb\n1\tx, y\n2\tz\n", name: "t.txt"))
        #expect(tab.dialect?.delimiter == 0x09 && tab.format == .tsv)
        let pipe = try SchemaInference.infer(path: try Self.write("a|b|c\n1|2|3\n4|5|6\n"))
        #expect(pipe.dialect?.delimiter == UInt8(ascii: "|"))
        let single = try SchemaInference.infer(
            path: try Self.write("id,name\n1,'Smith, J'\n2,'Roe, K'\n3,'Poe, E'\n"))
        #expect(single.dialect?.quote == UInt8(ascii: "'") && single.fields.count == 2, "\(single.toml())")
        let spaced = try SchemaInference.infer(path: try Self.write("a, b, c\n1, \"x, y\", 3\n2, \"z\", 4\n"))
        #expect(spaced.dialect?.skipInitialSpace == true && spaced.fields.map(\.name) == ["a", "b", "c"])
        #expect(try Self.field(spaced, "c").declaration == "int")
        let headless = try SchemaInference.infer(
            path: try Self.write("1,2025-01-01,x\n2,2025-01-02,y\n3,2025-01-03,z\n"))
        #expect(headless.dialect?.header == false && headless.rows == 3)
        #expect(headless.fields.map(\.name) == ["field_1", "field_2", "field_3"])
        #expect(headless.fields.map(\.declaration) == ["int", "date", "string"])
    }

    @Test("names: made valid and unique, each rename shown; empty and repeated columns")
    func names() throws {
        let i = try SchemaInference.infer(
            path: try Self.write("Trip ID,name,,Name,2020,name\n1,a,b,c,d,e\n2,f,g,h,i,j\n"))
        #expect(i.fields.map(\.name) == ["Trip_ID", "name", "field_3", "Name_2", "_2020", "name_3"])
        #expect(i.renamed.map(\.column) == ["Trip ID", "", "Name", "2020", "name"])
        #expect(i.json().contains(#""renamed": {"Trip ID": "Trip_ID", "": "field_3", "Name": "Name_2""#))
    }

    @Test("identifier candidates: singles first; pairs when no single is unique; _key when nothing is")
    func keys() throws {
        var text = "code,year,region,amount\n"
        for k in 0..<3_000 { text += "c\(k % 1_000),\(2000 + k / 1_000),r\(k % 3),\(k % 10)\n" }
        let pair = try SchemaInference.infer(path: try Self.write(text))
        #expect(pair.identifierCandidates.first == ["code", "year"], "\(pair.identifierCandidates)")
        #expect(pair.identifierCandidates.allSatisfy { $0.count == 2 })
        #expect(pair.toml().contains(#"identifier = ["code", "year"]"#))
        let none = try SchemaInference.infer(path: try Self.write("a,b\n1,2\n1,2\n"))
        #expect(none.identifierCandidates.isEmpty && none.identifier == ["_key"])
        #expect(none.toml().contains("_key") && none.json().contains(#""_key": "string""#))
        // A null disqualifies a field.
        let nullable = try SchemaInference.infer(path: try Self.write("id,other\n1,a\n,b\n3,c\n"))
        #expect(nullable.identifierCandidates == [["other"]])
    }

    @Test("uniqueness stays exact past the memory budget: runs spilled to disk find a repeat 200,000 rows apart")
    func spilled() throws {
        var text = "id,v\n"
        for k in 0..<200_000 { text += "\(k),\(k)\n" }
        text += "200000,17\n"
        var options = InferOptions()
        options.memory = 1 << 20  // chunks of 65,536 hashes: four runs
        let i = try SchemaInference.infer(path: try Self.write(text), options: options)
        #expect(i.identifierCandidates == [["id"]], "\(i.identifierCandidates)")
        #expect(i.rows == 200_001)
    }

    @Test("JSON and NDJSON: kinds to types, missing members optional, nested values json")
    func json() throws {
        let nd = try SchemaInference.infer(
            path: try Self.write(
                #"""
                {"id": 1, "name": "a", "tags": ["x"], "at": "2025-01-01", "n": 1}
                {"id": 2, "name": "b", "tags": [], "at": "2025-01-02", "n": 2.5, "extra": true}
                {"id": 3, "name": null, "tags": {"k": 1}, "at": "2025-01-03", "n": 3}
                """#, name: "items.ndjson"))
        #expect(nd.format == .ndjson && nd.rows == 3 && nd.dialect == nil)
        #expect(nd.fields.map(\.declaration) == ["int", "string?", "json", "date", "double", "bool?"])
        #expect(try Self.field(nd, "n").evidence?.line == 2)
        #expect(nd.identifier == ["id"])
        let array = try SchemaInference.infer(
            path: try Self.write(#"[{"k": "a", "v": true}, {"k": "b", "v": "yes"}]"#, name: "x.json"))
        #expect(array.format == .json && array.fields.map(\.declaration) == ["string", "json"])
    }

    @Test("NDJSON whose records each name keys of their own: every key optional, its nulls counted, no identifier")
    func sparseKeys() throws {
        // 20,000 records, each with the shared id and a key of its own, and
        // every fifth with a key shared by those: issue 51's 100,000 distinct
        // keys took 49.5 s of CPU, a pass over every column for each record.
        var text = ""
        for k in 0..<20_000 {
            text += #"{"id": \#(k), "k\#(k)": \#(k)"# + (k % 5 == 0 ? #", "fifth": "x\#(k)"}"# : "}") + "\n"
        }
        let i = try SchemaInference.infer(path: try Self.write(text, name: "sparse.ndjson"))
        #expect(i.rows == 20_000 && i.fields.count == 20_002)
        #expect(try Self.field(i, "id").declaration == "int")
        #expect(i.identifier == ["id"])
        let first = try Self.field(i, "k0"), last = try Self.field(i, "k19999")
        #expect(first.declaration == "int?" && last.declaration == "int?")
        #expect(first.values == 1 && first.nulls.values.reduce(0, +) == 19_999, "\(first.nulls)")
        #expect(last.values == 1 && last.nulls.values.reduce(0, +) == 19_999, "\(last.nulls)")
        let fifth = try Self.field(i, "fifth")
        #expect(fifth.declaration == "string?" && fifth.values == 4_000)
        #expect(fifth.nulls.values.reduce(0, +) == 16_000, "\(fifth.nulls)")
        #expect(!i.identifierCandidates.contains(["fifth"]) && !i.identifierCandidates.contains(["k0"]))
    }

    @Test(
        "a header longer than the first sample (1,500 long column names) is read whole; a first line past the cap is refused saying so"
    )
    func longHeader() throws {
        let names = (0..<1_500).map { "a_column_with_a_rather_long_and_descriptive_name_\($0)" }
        var text = names.joined(separator: ",") + "\n"
        #expect(text.utf8.count > SchemaInference.longestSample >> 8 && text.utf8.count > 1 << 16)
        for r in 0..<3 { text += (0..<1_500).map { "\(r * 10_000 + $0)" }.joined(separator: ",") + "\n" }
        let i = try SchemaInference.infer(path: try Self.write(text, name: "wide.csv"))
        #expect(i.rows == 3 && i.fields.count == 1_500)
        #expect(try Self.field(i, names[1_499]).declaration == "int")
        // A first line longer than the cap, then more: refused with the reason.
        var long = [UInt8](repeating: UInt8(ascii: "a"), count: SchemaInference.longestSample + 10)
        long += Array("\nb\n".utf8)
        let path = try Self.write(String(decoding: long, as: UTF8.self), name: "long.csv")
        #expect(throws: DepotError.self) { try SchemaInference.infer(path: path) }
        do { _ = try SchemaInference.infer(path: path) } catch let e as DepotError {
            #expect(e.message.contains("longer than 16 MiB"), "\(e.message)")
        }
    }

    @Test(
        "quotes escaped by a backslash: infer detects the escape, an import with it keeps every row and reads the quotes; without it, the rows are rejected"
    )
    func backslashEscapes() async throws {
        // Issue 51: a real file lost 5 of 85 rows to rejects.
        var text = "id,name,note\n"
        for i in 0..<85 {
            text +=
                i % 17 == 3
                ? "\(i),\"H. Norwood \\\"Barney\\\" Ewell\",\"a \\\\ path, and \\\"more\\\"\"\n"
                : "\(i),\"Runner \(i)\",\"plain, \"\"doubled\"\" quotes\"\n"
        }
        let path = try Self.write(text, name: "olympians.csv")
        let found = try SchemaInference.infer(path: path)
        #expect(found.dialect?.escape == UInt8(ascii: "\\"))
        #expect(found.problemCount == 0 && found.rows == 85, "\(found.problems)")
        #expect(found.importFlags.contains("--escape '\\'"), "\(found.importFlags)")
        #expect(found.watchSettings.contains(#"escape = "\\""#), "\(found.watchSettings)")
        #expect(found.json().contains(#""escape": "\\""#))
        let entity = try found.entitySchema(name: "Olympian")
        let t = try await TemporaryStore(entities: [entity])
        let request = ImportRequest(
            job: "j", entity: "Olympian", path: path, rejectsPath: t.folder.appendingPathComponent("r").path,
            options: found.importOptions)
        let result = try await Importer.run(request, into: t.store)
        #expect(result.counters.inserted == 85 && result.counters.rejected == 0, "\(result.counters)")
        func value(_ id: Int, _ field: String) async throws -> Value? {
            let set = try await t.store.reader.fetch(FetchDescriptor(entity: "Olympian", where: "id == \(id)"))
            return set.fields.firstIndex { $0.name == field }.flatMap { set.rows.first?[$0] }
        }
        #expect(try await value(3, "name") == .string(#"H. Norwood "Barney" Ewell"#))
        #expect(try await value(3, "note") == .string(#"a \ path, and "more""#))
        #expect(try await value(4, "note") == .string(#"plain, "doubled" quotes"#))
        // Without the escape (RFC 4180), those rows are rejects.
        var strict = request
        strict.job = "k"
        strict.options.escape = nil
        let t2 = try await TemporaryStore(entities: [entity])
        let rejected = try await Importer.run(strict, into: t2.store)
        #expect(rejected.counters.rejected == 5, "\(rejected.counters)")
        // A plain file is not read as escaped.
        let plainFile = try Self.write("a,b\n1,\"C:\\dir\\\"\n2,\"x\"\n", name: "paths.csv")
        #expect(try SchemaInference.infer(path: plainFile).dialect?.escape == nil)
    }

    @Test("bad input: empty, not text, header only, UTF-16, ragged rows with their lines, Latin-1")
    func badInput() throws {
        func refusal(_ bytes: [UInt8], _ name: String = "f.csv") throws -> String {
            do {
                _ = try SchemaInference.infer(path: try Self.write(bytes, name: name))
                return "accepted"
            } catch let e as DepotError {
                return e.message
            }
        }
        #expect(try refusal([]).contains("is empty"))
        #expect(try refusal([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D]).contains("is not text"))
        #expect(try refusal(Array("a,b,c\n".utf8)).contains("a header row and no records"))
        #expect(try refusal(Array("a,b\n1,2,3\n4\n".utf8)).contains("no record of f.csv fits its header (line 2"))
        #expect(try refusal([0xFF, 0xFE, 0x61, 0x00]).contains("UTF-16"))
        #expect(try refusal(Array("nope".utf8), "f.json").contains("is not JSON"))
        let ragged = try SchemaInference.infer(path: try Self.write("a,b\n1,2\n3\n4,5,6\n7,8\n"))
        #expect(ragged.rows == 2 && ragged.problemCount == 2)
        #expect(ragged.problems.map(\.line) == [3, 4])
        #expect(ragged.toml().contains("line 3: the record has 1 fields, the header has 2"))
        let latin = try SchemaInference.infer(
            path: try Self.write(Array("a,b\n1,caf".utf8) + [0xE9] + [0x0A], name: "l.csv"))
        #expect(latin.encoding == "latin-1")
        let bom = try SchemaInference.infer(
            path: try Self.write([0xEF, 0xBB, 0xBF] + Array("a,b\n1,2\n".utf8), name: "b.csv"))
        #expect(bom.encoding == "utf-8-bom" && bom.fields.map(\.name) == ["a", "b"])
    }

    @Test("the third-party corpora: every well-formed CSV infers with a header and the expected rows")
    func corpora() throws {
        for name in CSVConformanceTests.spectrumCases {
            let path = Fixtures.path("csv-spectrum/csvs/\(name).csv")
            let i = try SchemaInference.infer(path: path)
            let expected = try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Fixtures.path("csv-spectrum/json/\(name).json"))))
            let rows = (expected as? [Any])?.count ?? 1
            #expect(i.rows == rows && i.dialect?.header == true && i.problemCount == 0, "\(name): \(i.toml())")
        }
        let located = try SchemaInference.infer(path: Fixtures.path("csv-spectrum/csvs/location_coordinates.csv"))
        #expect(located.dialect?.lenientQuotes == true && located.encoding == "utf-8", "\(located.toml())")
    }

    /// Every well-formed file of the third-party corpora, and files that
    /// need each import option inference can give.
    static func importable() throws -> [String] {
        var files = try Fixtures.files(in: "csv-spectrum/csvs").map { Fixtures.path("csv-spectrum/csvs/\($0)") }
        // tsv-utils: its invalid*.csv are broken on purpose; header3.csv is
        // a header alone and header4.csv empty, which infer refuses.
        files += try Fixtures.files(in: "tsv-utils-csv2tsv")
            .filter { $0.hasSuffix(".csv") && !$0.hasPrefix("invalid") && !["header3.csv", "header4.csv"].contains($0) }
            .map { Fixtures.path("tsv-utils-csv2tsv/\($0)") }
        files += ["bom.csv", "test.csv", "testCSV85.csv"].map { Fixtures.path("commons-csv-CSVFileParser/\($0)") }
        return files
    }

    @Test(
        "each corpus file imports into the entity inferred from it: rejected only what infer lists as not fitting, every record saved; a second import changes nothing"
    )
    func importsWhatItInfers() async throws {
        let crafted = [
            try Self.write("Trip ID;score;label\n1;NA;'a; b'\n2;5;\"\"\n3;-;x\n", name: "semi.csv"),
            try Self.write("a, b\n1, \"x, y\"\n1, \"x, y\"\n", name: "dupes.csv"),
            try Self.write(
                Array("name,n\ncaf".utf8) + [0xE9] + Array(",1\nna".utf8) + [0xEF] + Array("ve,2\n".utf8),
                name: "latin.csv"),
            try Self.write("1,2025-01-01,x\n2,2025-01-02,y\n", name: "headless.csv"),
            try Self.write(
                Array("Gr".utf8) + [0xF6, 0xDF] + Array("e,n\n1,caf".utf8) + [0xE9] + Array("\n2,b\n".utf8),
                name: "latin-header.csv"),
            try Self.write("{\"k k\": 1, \"v\": [1]}\n{\"k k\": 1, \"v\": [1]}\n{\"k k\": 2}\n", name: "j.ndjson")
        ]
        var checked = 0
        for path in try Self.importable() + crafted {
            let found = try SchemaInference.infer(path: path)
            let entity = try found.entitySchema(name: "Data")
            let t = try await TemporaryStore(entities: [entity])
            let request = ImportRequest(
                job: "j", entity: "Data", path: path, rejectsPath: t.folder.appendingPathComponent("r").path,
                options: found.importOptions)
            let first = try await Importer.run(request, into: t.store)
            let name = URL(fileURLWithPath: path).lastPathComponent
            if first.counters.rejected != found.problemCount {
                Issue.record(
                    "\(name) rejects: \((try? String(contentsOfFile: request.rejectsPath, encoding: .utf8)) ?? "")")
            }
            #expect(first.counters.rejected == found.problemCount, "\(name): \(first.counters)\n\(found.toml())")
            // Every record is saved (a repeat of an earlier one in the file
            // counts as a duplicate).
            let c = first.counters
            #expect(c.inserted + c.updated + c.unchanged + c.duplicates == found.rows, "\(name): \(c)")
            var again = request
            again.job = "j2"
            let second = try await Importer.run(again, into: t.store)
            #expect(second.counters.inserted == 0 && second.counters.updated == 0, "\(name): \(second.counters)")
            checked += 1
        }
        #expect(checked >= 20)
        // The crafted files read as they should.
        let semi = try SchemaInference.infer(path: crafted[0])
        #expect(semi.importOptions.columnFields == ["Trip ID": "Trip_ID"] && semi.importOptions.nulls == ["-", "NA"])
        #expect(semi.importOptions.quote == UInt8(ascii: "'") && semi.importOptions.delimiter == UInt8(ascii: ";"))
        let dupes = try SchemaInference.infer(path: crafted[1])
        #expect(dupes.identifier == ["_key"] && dupes.importOptions.skipInitialSpace)
        // A Latin-1 header: its names read as the import reads them.
        let header = try SchemaInference.infer(path: crafted[4])
        #expect(header.encoding == "latin-1" && header.fields.map(\.name) == ["Größe", "n"], "\(header.toml())")
        let latin = try SchemaInference.infer(path: crafted[2])
        #expect(latin.importOptions.latin1)
        let t = try await TemporaryStore(entities: [try latin.entitySchema(name: "Data")])
        _ = try await Importer.run(
            ImportRequest(
                job: "l", entity: "Data", path: crafted[2], rejectsPath: t.folder.path + "/r",
                options: latin.importOptions),
            into: t.store)
        let names = try await t.store.reader.fetchJSON(FetchDescriptor(entity: "Data", sort: [SortDescriptor("n")]))
        #expect(names.contains("café") && names.contains("naïve"), "\(names)")
    }
    @Test("one file is told the same dialect every time: its escape too (CI's FuzzInfer finding of 2026-11-29)")
    func sameEveryTime() throws {
        // Fuzz/Regressions/FuzzInfer/escape-told-in-a-dictionary-order.csv:
        // the escape was chosen by comparing two sums of doubles taken in a
        // dictionary's order, which differs between dictionaries.
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../Fuzz/Regressions/FuzzInfer/escape-told-in-a-dictionary-order.csv")
        let sample = try [UInt8](Data(contentsOf: file))
        let first = try #require(DialectSniffer.sniff(sample, complete: true))
        var told: Set<String> = []
        // Dictionaries kept alive between the tries, so that each try's
        // dictionaries stand at other addresses (which seed their order).
        var kept: [[Int: Int]] = []
        for k in 0..<2_000 {
            kept.append(Dictionary(uniqueKeysWithValues: (0..<k % 13).map { ($0, k) }))
            let d = try #require(DialectSniffer.sniff(sample, complete: true))
            told.insert("\(d.delimiter) \(d.quote) \(String(describing: d.escape)) \(d.skipInitialSpace)")
        }
        #expect(
            told == ["\(first.delimiter) \(first.quote) \(String(describing: first.escape)) \(first.skipInitialSpace)"])
    }
}
