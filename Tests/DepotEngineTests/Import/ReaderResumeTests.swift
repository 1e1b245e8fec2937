import Foundation
import Testing

@testable import DepotEngine

/// A reader resumed at any place it gave (before it finished) reads exactly
/// what the whole read read after that place: the same records, the same
/// errors with the same lines and columns, nothing twice. This is what a
/// killed import relies on when it resumes from its checkpoint.
@Suite("Readers resumed at every place they gave")
struct ReaderResumeTests {
    /// One item of a read: a record's fields or an error's line and reason,
    /// and the reader's `line` when it gave the item.
    struct Item: Equatable, CustomStringConvertible {
        var text: String
        var line: Int
        var description: String { "\(line): \(text)" }
    }

    /// A place to resume at, and whether the reader had finished there.
    struct Place { var offset: Int64; var line: Int; var lineStart: Int64; var finished: Bool }

    static func readJSON(_ path: String, bufferSize: Int, cap: Int, from place: Place? = nil) throws -> (
        items: [Item], places: [Place]
    ) {
        let reader = try JSONRecordReader(
            path: path, offset: place?.offset ?? 0, line: place?.line ?? 1,
            lineStart: place?.lineStart, bufferSize: bufferSize, maxRecordBytes: cap)
        var items: [Item] = []
        var places = [
            Place(
                offset: reader.offset, line: reader.resumeLine, lineStart: reader.resumeLineStart,
                finished: reader.isFinished)
        ]
        while let item = try reader.next() {
            if items.count > 10_000 { Issue.record("the reader does not advance"); break }
            switch item {
            case .record:
                let members = (0..<reader.members.count).map { m in
                    reader.withKey(m) { String(decoding: $0, as: UTF8.self) } + "="
                        + reader.withValue(m) { String(decoding: $0, as: UTF8.self) }
                }
                items.append(Item(text: members.joined(separator: "; "), line: reader.line))
            case .malformed(let line, let reason):
                #expect(reader.line == line, "the reader's line follows its errors")
                items.append(Item(text: "error: \(reason)", line: line))
            }
            places.append(
                Place(
                    offset: reader.offset, line: reader.resumeLine, lineStart: reader.resumeLineStart,
                    finished: reader.isFinished))
        }
        return (items, places)
    }

    static func readCSV(_ path: String, bufferSize: Int, cap: Int, from place: Place? = nil) throws -> (
        items: [Item], places: [Place]
    ) {
        let reader = try CSVReader(
            path: path, offset: place?.offset ?? 0, line: place?.line ?? 1, bufferSize: bufferSize,
            maxRecordBytes: cap)
        var items: [Item] = []
        var places = [Place(offset: reader.offset, line: reader.resumeLine, lineStart: 0, finished: false)]
        while let item = try reader.next() {
            if items.count > 10_000 { Issue.record("the reader does not advance"); break }
            switch item {
            case .record:
                let fields = (0..<reader.fieldCount).map { reader.string($0) ?? "<null>" }
                items.append(Item(text: fields.joined(separator: "|"), line: reader.line))
            case .malformed(let line, let reason):
                #expect(reader.line == line, "the reader's line follows its errors")
                items.append(Item(text: "error: \(reason)", line: line))
            }
            places.append(Place(offset: reader.offset, line: reader.resumeLine, lineStart: 0, finished: false))
        }
        return (items, places)
    }

    /// Reads `bytes` whole, then resumed at every place, through each buffer size.
    static func check(_ bytes: [UInt8], name: String, csv: Bool = false, cap: Int = 64 << 20) throws -> [Item] {
        let folder = try TemporaryStore.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent(csv ? "in.csv" : "in.json").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let read = csv ? readCSV : readJSON
        var reference: [Item]?
        for size in [1 << 20, 16, 7] {
            let whole = try read(path, size, cap, nil)
            if let reference { #expect(whole.items == reference, "\(name): buffer \(size)") }
            reference = reference ?? whole.items
            for (k, place) in whole.places.enumerated() where !place.finished {
                let rest = try read(path, size, cap, place)
                #expect(rest.items == Array(whole.items[k...]), "\(name): resumed after item \(k), buffer \(size)")
            }
        }
        return reference ?? []
    }

    /// The inputs of the review that found the defects, kept as regressions.
    static let jsonRegressions: [(String, [UInt8])] = [
        ("trailing comma, then text", Array("[{\"a\": 1},\n ]  junk\n".utf8)),
        ("trailing comma at the end", Array("[{\"a\": 1}, {\"a\": 2},]".utf8)),
        (
            "more than a buffer of junk after ]",
            Array("[{\"a\": 1}]".utf8) + Array(repeating: UInt8(ascii: "x"), count: 100) + Array("\n{\"b\": 2}".utf8)
        ),
        ("junk after ] over lines", Array("[{\"a\": 1}\n]\n\n   {\"b\": 2} [3]\n".utf8)),
        ("a stray BB before the array", [0xBB] + Array("[{\"a\": 1}]".utf8)),
        ("half a byte order mark", [0xEF, 0xBB] + Array("[{\"a\": 1}]".utf8)),
        ("byte order mark bytes after space", Array("  ".utf8) + [0xEF, 0xBB, 0xBF] + Array("[{\"a\": 1}]".utf8)),
        ("a byte order mark and an empty array", [0xEF, 0xBB, 0xBF] + Array(" [ ] ".utf8)),
        (
            "errors after a resume keep their columns",
            Array("[{\"a\": 1}, {\"a\": 2}, {\"a\": tru}, {\"b\": 3} x]".utf8)
        ),
        ("an unclosed array ending in an element", Array("[{\"a\": 1},\n{\"a\": 2}".utf8)),
        ("NDJSON with errors", Array("{\"a\": 1}\n{\"a\" 2}\n\n[1]\n{\"a\": 3} x\n{\"a\": 4}".utf8)),
        ("NDJSON with a byte order mark", [0xEF, 0xBB, 0xBF] + Array("{\"a\": tru}\n{\"a\": 1}\n".utf8))
    ]

    @Test("JSON: the regressions of item 7 read the same resumed anywhere", arguments: jsonRegressions.map(\.0))
    func jsonRegression(_ name: String) throws {
        _ = try Self.check(Self.jsonRegressions.first { $0.0 == name }!.1, name: name)
    }

    @Test("JSON: after text past the closing ], the reader says it finished and its place is the file's end")
    func finishesAtTheEnd() throws {
        let folder = try TemporaryStore.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("in.json").path
        let bytes = Array("[{\"a\": 1}]".utf8) + Array(repeating: UInt8(ascii: "x"), count: 200)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try JSONRecordReader(path: path, bufferSize: 16)
        #expect(try reader.next() == .record)
        #expect(!reader.isFinished)
        guard case .malformed(1, let reason) = try reader.next() else { Issue.record("expected an error"); return }
        #expect(reason == "invalid JSON at line 1, column 11: text follows the closing ] of the array")
        #expect(reader.isFinished)
        #expect(reader.offset == Int64(bytes.count))
        #expect(try reader.next() == nil)
    }

    @Test(
        "JSON: every JSONTestSuite file reads the same resumed anywhere",
        arguments: JSONConformanceTests.files)
    func jsonSuite(_ name: String) throws {
        let bytes = try [UInt8](
            Data(contentsOf: URL(fileURLWithPath: Fixtures.path("\(JSONConformanceTests.folder)/\(name)"))))
        _ = try Self.check(bytes, name: name)
        // As NDJSON lines and as array elements, too.
        _ = try Self.check(bytes + [0x0A] + Array("{\"a\": 1}\n".utf8) + bytes, name: name + " as lines")
        _ = try Self.check(Array("[".utf8) + bytes + Array(", {\"a\": 1}]".utf8), name: name + " in an array")
        // With a cap smaller than some of the files: skipped or cut, the same everywhere.
        _ = try Self.check(bytes + [0x0A] + Array("{\"a\": 1}\n".utf8), name: name + " capped", cap: 40)
    }

    static let csvRegressions: [(String, [UInt8])] = [
        ("a quote left open at the end", Array("a,b\n1,2\n\"x,3\n4,5\n".utf8)),
        ("a quote left open over CR and CRLF", Array("a,b\r\n1,\"2\r3\r\n4\n".utf8)),
        ("text after a closing quote", Array("a,b\n\"x\"y,1\n2,3\n\"\"\"q\"\"\",4".utf8)),
        ("blank lines and a bare CR", Array("a,b\n\n1,2\r\r\n3,4\r".utf8))
    ]

    @Test(
        "CSV: the regressions read the same resumed anywhere, and line follows the errors",
        arguments: csvRegressions.map(\.0))
    func csvRegression(_ name: String) throws {
        _ = try Self.check(Self.csvRegressions.first { $0.0 == name }!.1, name: name, csv: true)
    }

    @Test("CSV: a quote left open at the end is one error on its own line, and the count of lines goes on past it")
    func unclosedQuote() throws {
        let folder = try TemporaryStore.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("in.csv").path
        try Data("a,b\n1,2\n\"x,3\n4,5\n".utf8).write(to: URL(fileURLWithPath: path))
        let reader = try CSVReader(path: path)
        #expect(try reader.next() == .record)
        #expect(try reader.next() == .record)
        #expect(reader.line == 2)
        #expect(
            try reader.next() == .malformed(line: 3, reason: "a quoted field is not closed before the end of the file"))
        #expect(reader.line == 3)
        #expect(reader.resumeLine == 5)
        #expect(try reader.next() == nil)
    }

    @Test("CSV: csv-spectrum and commons-csv files read the same resumed anywhere")
    func csvCorpora() throws {
        for folder in ["csv-spectrum/csvs", "commons-csv-CSVFileParser"] {
            for name in try Fixtures.files(in: folder) where name.hasSuffix(".csv") || name.hasSuffix(".txt") {
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Fixtures.path("\(folder)/\(name)"))))
                _ = try Self.check(bytes, name: "\(folder)/\(name)", csv: true)
                _ = try Self.check(bytes, name: "\(folder)/\(name) capped", csv: true, cap: 30)
            }
        }
    }

    @Test("fuzz findings read the same through every buffer and resumed anywhere, with the cap the fuzzer used")
    func fuzzFindings() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../../Fuzz/Regressions"
        )
        .standardized
        for target in ["FuzzJSON", "FuzzCSV"] {
            let names =
                (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(target).path)) ?? []
            for name in names where !name.hasPrefix(".") {
                let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent("\(target)/\(name)")))
                _ = try Self.check(
                    bytes, name: "\(target)/\(name)", csv: target == "FuzzCSV",
                    cap: bytes.count % 3 == 0 ? 256 : 64 << 20)
            }
        }
    }

    @Test("a record, line or element longer than the cap is one error, and reading goes on after it where it can")
    func tooLong() throws {
        let x = String(repeating: "x", count: 5_000)
        let csv = try Self.check(Array("a,b\n1,2\n\"\(x),3\n4,5\n\"\(x)\n".utf8), name: "csv", csv: true, cap: 1_024)
        #expect(csv.map(\.line) == [1, 2, 3, 4, 5])
        #expect(
            csv[2].text
                == "error: the record is longer than 1 KiB (is a quote left open?); it is skipped to the end of the line it starts on"
        )
        #expect(csv[3].text == "4|5")
        let ndjson = try Self.check(
            Array("{\"a\": 1}\n{\"a\": \"\(x)\"}\n{\"a\": 2}\n".utf8), name: "ndjson", cap: 1_024)
        #expect(ndjson.map(\.line) == [1, 2, 3])
        #expect(ndjson[1].text == "error: the line is longer than 1 KiB; each line of NDJSON must be one object")
        let array = try Self.check(
            Array("[{\"a\": 1},\n{\"a\": \"\(x)\"},\n{\"a\": 2}]".utf8), name: "array", cap: 1_024)
        #expect(array.map(\.line) == [1, 2])
        #expect(array[1].text == "error: the array element is longer than 1 KiB; the rest of the array is not read")
        let bad = try Self.check(
            Array("[{\"a\": 1},\n{\"a\" \(x)},\n{\"a\": 2}]".utf8), name: "bad element", cap: 1_024)
        // The bad element and what follows it up to the next comma are one stretch longer than the cap.
        #expect(bad.map(\.line) == [1, 2])
        #expect(bad[1].text.contains("longer than 1 KiB"))
    }
}
