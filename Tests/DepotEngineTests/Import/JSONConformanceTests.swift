import Foundation
import Testing

@testable import DepotEngine

/// Reads a whole file with `JSONRecordReader`: each record's members as
/// `key=value` text, and the lines of the malformed records with their reasons.
func readJSON(_ path: String, bufferSize: Int = 1 << 20) throws
    -> (records: [[String]], malformed: [Int], reasons: [String])
{
    let reader = try JSONRecordReader(path: path, bufferSize: bufferSize)
    var records: [[String]] = []
    var malformed: [Int] = []
    var reasons: [String] = []
    var steps = 0
    while let item = try reader.next() {
        steps += 1
        // A reader that stops advancing would loop forever: fail instead.
        if steps > 100_000 { Issue.record("the reader does not advance"); break }
        switch item {
        case .record:
            records.append(
                (0..<reader.members.count).map { m in
                    reader.withKey(m) { String(decoding: $0, as: UTF8.self) } + "="
                        + reader.withValue(m) { String(decoding: $0, as: UTF8.self) }
                })
        case .malformed(let line, let reason):
            malformed.append(line)
            reasons.append(reason)
        }
    }
    return (records, malformed, reasons)
}

@Suite("JSON conformance")
struct JSONConformanceTests {
    static let folder = "JSONTestSuite/test_parsing"
    static let files = (try? Fixtures.files(in: folder).filter { $0.hasSuffix(".json") }) ?? []

    /// What this parser does with the implementation-defined (`i_`) files:
    /// - numbers of any size or precision are valid JSON (the field's type
    ///   judges them later): accept;
    /// - escaped lone or inverted surrogates (`\uD800`) are valid syntax:
    ///   accept, and read as U+FFFD;
    /// - bytes that are not UTF-8 (latin-1, UTF-16, overlong or truncated
    ///   sequences, encoded surrogates, code points past U+10FFFF): reject;
    /// - a byte order mark before the value: reject (the record reader drops
    ///   one at the start of a file, but a JSON value does not start with it);
    /// - 500 nested arrays: accept (nesting costs heap, not stack).
    static func acceptsImplementationDefined(_ name: String) -> Bool {
        if name.hasPrefix("i_number_") || name == "i_structure_500_nested_arrays.json" { return true }
        if name.contains("surrogate") && !name.contains("UTF8_surrogate") { return true }
        return false
    }

    func verdict(_ name: String) throws -> (offset: Int, reason: String)? {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Fixtures.path("\(Self.folder)/\(name)"))))
        return bytes.withUnsafeBufferPointer { JSONSyntax.validate($0) }
    }

    @Test("the corpus is all there")
    func corpus() {
        #expect(Self.files.filter { $0.hasPrefix("y_") }.count == 95)
        #expect(Self.files.filter { $0.hasPrefix("n_") }.count == 188)
        #expect(Self.files.filter { $0.hasPrefix("i_") }.count == 35)
    }

    @Test("JSONTestSuite: every y_ file is accepted", arguments: files.filter { $0.hasPrefix("y_") })
    func accepts(_ name: String) throws {
        let v = try verdict(name)
        #expect(v == nil, "\(name): \(v.map { "byte \($0.offset): \($0.reason)" } ?? "")")
    }

    @Test("JSONTestSuite: every n_ file is rejected with a reason", arguments: files.filter { $0.hasPrefix("n_") })
    func rejects(_ name: String) throws {
        let v = try verdict(name)
        #expect(v != nil, "\(name) was accepted")
        #expect(v?.reason.isEmpty == false)
    }

    @Test("JSONTestSuite: every i_ file gets the documented verdict", arguments: files.filter { $0.hasPrefix("i_") })
    func implementationDefined(_ name: String) throws {
        #expect((try verdict(name) == nil) == Self.acceptsImplementationDefined(name))
    }

    @Test(
        "JSONTestSuite: the record reader reads every file to its end without crashing or hanging, also through a 7-byte buffer",
        arguments: files)
    func recordReader(_ name: String) throws {
        let path = Fixtures.path("\(Self.folder)/\(name)")
        let big = try readJSON(path)
        let small = try readJSON(path, bufferSize: 7)
        #expect(big.records == small.records)
        #expect(big.malformed == small.malformed)
        // A file that is an object is one record, when it is valid JSON.
        if name.hasPrefix("y_object") { #expect(big.records.count + big.malformed.count >= 1) }
    }

    @Test("a json field keeps valid JSON text and refuses the rest, saying where")
    func jsonField() throws {
        func parse(_ text: String) -> Result<Value, FieldParser.Failure> {
            Array(text.utf8).withUnsafeBufferPointer { bytes in
                do throws(FieldParser.Failure) { return .success(try FieldParser.parse(bytes, as: .json)) } catch {
                    return .failure(error)
                }
            }
        }
        #expect(try parse(#" {"a": [1, 2.5e3, null]} "#).get() == .string(#" {"a": [1, 2.5e3, null]} "#))
        #expect(try parse("\"x\"").get() == "\"x\"")
        guard case .failure(let e) = parse(#"{"a": [1, 2,]}"#) else { Issue.record("accepted"); return }
        #expect(
            e.reason
                == "is not valid JSON (at byte 13: expected a value (a string, number, object, array, true, false or null))"
        )
    }
}

@Suite("JSON records")
struct JSONRecordReaderTests {
    func write(_ text: String) throws -> (String, URL) {
        let folder = try TemporaryStore.makeFolder()
        let path = folder.appendingPathComponent("in.json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return (path, folder)
    }

    @Test("NDJSON: records by line, blank lines skipped, bad lines rejected with their line and the reading goes on")
    func ndjson() throws {
        let text =
            "\u{FEFF}{\"a\": 1, \"b\": \"x\\ny\"}\r\n\n  \r\n{\"a\": [1, {\"c\": null}]}\n"
            + "{\"a\": 1,}\n[1, 2]\n{\"a\": \"\\u00e9\\ud83d\\ude00\"} trailing\n{\"a\": tru}\n{\"a\":\"é\"}"
        let (path, folder) = try write(text)
        defer { try? FileManager.default.removeItem(at: folder) }
        for size in [1 << 20, 5] {
            let (records, malformed, reasons) = try readJSON(path, bufferSize: size)
            #expect(records == [["a=1", "b=x\ny"], ["a=[1, {\"c\": null}]"], ["a=é"]])
            #expect(malformed == [5, 6, 7, 8])
            #expect(reasons[0] == "invalid JSON at line 5, column 9: expected a member name in double quotes")
            #expect(reasons[1].contains("not an object"))
            #expect(reasons[2].hasPrefix("invalid JSON at line 7, column 29: text follows the object"))
            #expect(reasons[3].hasPrefix("invalid JSON at line 8, column 7"))
        }
    }

    @Test("NDJSON: invalid UTF-8 rejects its record only")
    func invalidUTF8() throws {
        let folder = try TemporaryStore.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("in.ndjson").path
        var bytes = Array("{\"a\":\"ok\"}\n{\"a\":\"".utf8) + [0xC3, 0x28] + Array("\"}\n{\"a\":\"fine\"}\n".utf8)
        bytes += Array("{\"\u{00E9}\":1}\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (records, malformed, reasons) = try readJSON(path)
        #expect(records == [["a=ok"], ["a=fine"], ["é=1"]])
        #expect(malformed == [2])
        #expect(reasons == ["invalid JSON at line 2, column 7: the text is not valid UTF-8"])
    }

    @Test("an array of objects: elements across lines, a bad element skipped to the next one, errors at the end")
    func array() throws {
        let text = """
            [
              {"a": 1,
               "b": [1, 2]},
              {"a": 2 "b": 3},
              {"a": {"deep": [1, 2, {"x": "]"}]}},
              42,
              {"a": "last"},
            ]
            """
        let (path, folder) = try write(text)
        defer { try? FileManager.default.removeItem(at: folder) }
        for size in [1 << 20, 3] {
            let (records, malformed, reasons) = try readJSON(path, bufferSize: size)
            #expect(records == [["a=1", "b=[1, 2]"], ["a={\"deep\": [1, 2, {\"x\": \"]\"}]}"], ["a=last"]])
            #expect(malformed == [4, 6, 8])
            #expect(reasons[0] == "invalid JSON at line 4, column 11: expected , or } after an object member")
            #expect(reasons[1].contains("not an object"))
            #expect(reasons[2].contains("trailing commas"))
        }
    }

    @Test("an array that is not closed, or followed by text, is reported once")
    func arrayEnds() throws {
        let (open, f1) = try write("[{\"a\": 1},\n{\"a\": 2}")
        defer { try? FileManager.default.removeItem(at: f1) }
        let a = try readJSON(open)
        #expect(a.records == [["a=1"], ["a=2"]])
        #expect(a.malformed == [2])
        #expect(a.reasons[0].contains("not closed"))
        let (after, f2) = try write("[{\"a\": 1}]\n{\"b\": 2}\n")
        defer { try? FileManager.default.removeItem(at: f2) }
        let b = try readJSON(after)
        #expect(b.records == [["a=1"]])
        #expect(b.malformed == [2])
        let (empty, f3) = try write("  \n")
        defer { try? FileManager.default.removeItem(at: f3) }
        #expect(try readJSON(empty).records.isEmpty)
    }

    @Test("a reader resumed at an offset it gave reads on exactly from there")
    func resume() throws {
        let text = "[{\"a\": 1},\n {\"a\": 2},\n {\"a\": 3}\n]"
        let (path, folder) = try write(text)
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try JSONRecordReader(path: path)
        _ = try first.next()
        _ = try first.next()
        let resumed = try JSONRecordReader(path: path, offset: first.offset, line: first.resumeLine)
        #expect(try resumed.next() == .record)
        #expect(resumed.line == 3)
        #expect(resumed.withValue(0) { String(decoding: $0, as: UTF8.self) } == "3")
        #expect(try resumed.next() == nil)
    }
}
