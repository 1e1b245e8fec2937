import DepotWire
import Foundation
import Testing

@testable import DepotEngine

/// The daemon reads a save's and a processor commit's body with
/// ``JSONTree`` and `QuickJSONBody` instead of `JSONDecoder` when it can
/// (issue #32: `JSONDecoder` was 18% of a processor's time). Held to one
/// rule: whatever the quick path reads, it reads to what `JSONDecoder`
/// reads; whatever `JSONDecoder` refuses, the quick path refuses (nil, and
/// the daemon words the error with `JSONDecoder`).
@Suite("Quick request bodies")
struct QuickBodyTests {
    static func quick(_ text: [UInt8]) -> JSONValue? { text.withUnsafeBytes(JSONTree.parse) }

    /// The rule for one document, as a `JSONValue`; whether the quick path read it.
    @discardableResult
    static func agree(_ bytes: [UInt8], _ what: String) -> Bool {
        let slow = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        let fast = quick(bytes)
        if let fast {
            #expect(slow != nil, "the quick path reads what JSONDecoder refuses: \(what)")
            #expect(
                Self.same(fast, slow), "the two paths read \(what) differently: \(fast) vs \(String(describing: slow))")
        }
        return fast != nil
    }

    /// Equal values of equal cases (`JSONValue`'s `==` takes `1` and `1.0` as equal).
    static func same(_ a: JSONValue, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (.null, .null?): true
        case (.bool(let x), .bool(let y)?): x == y
        case (.int(let x), .int(let y)?): x == y
        case (.double(let x), .double(let y)?): x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)?): Array(x.utf8) == Array(y.utf8)
        case (.array(let x), .array(let y)?): x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x), .object(let y)?): x.keys == y.keys && x.allSatisfy { same($0.value, y[$0.key]) }
        default: false
        }
    }

    @Test("JSONTestSuite: every file the quick path reads, it reads as JSONDecoder; it reads no n_ file")
    func corpus() throws {
        let folder = "JSONTestSuite/test_parsing"
        let files = try Fixtures.files(in: folder).filter { $0.hasSuffix(".json") }
        #expect(files.count > 300)
        var read = 0
        for file in files {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("\(folder)/\(file)"))))
            if Self.agree(bytes, file) {
                read += 1
                #expect(!file.hasPrefix("n_"), "the quick path reads \(file), which is not JSON")
            }
        }
        // Most valid documents take the quick path (77 of the 95 y_ files): it is not all left to JSONDecoder.
        #expect(read > 70)
    }

    @Test("numbers, strings, members: read as JSONDecoder reads them, or left to it")
    func edges() {
        let documents = [
            "1", "-0", "0", "1.0", "-0.0", "100.0", "1e2", "1E2", "1e-400", "1e400", "-1e400", "0.1", "1.5", "-2.5e-3",
            "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
            "123456789012345678", "1234567890123456789", "9007199254740992.0", "9007199254740993.0", "1e300",
            "123456789012345678901234567890", "4.9e-324", "1.7976931348623157e308", "true", "false", "null",
            #""\ud800""#, #""\udc00""#, #""\ud83d\ude00""#, #""a\u0000b""#, #""\u00e9\/\b\f\n\r\t\"\\""#, #""é😀""#,
            #"{"a": 1, "a": 2}"#, #"{"a": {"b": [1, {"c": null}]}}"#, #"[]"#, #"{}"#, #" [ 1 , 2 ] "#,
            #"{"a":1}x"#, "[1,]", "01", "+1", ".5", "1.", "NaN", "\u{FEFF}[1]", #"["\u{1}"]"#,
            String(repeating: "[", count: 63) + String(repeating: "]", count: 63),
            String(repeating: "[", count: 64) + String(repeating: "]", count: 64),
            String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        ]
        for d in documents { Self.agree(Array(d.utf8), d) }
        // The common cases do take the quick path.
        for d in ["1", "1.5", "100.0", #""\u00e9""#, #"{"a": [1, "x", null, true]}"#] {
            #expect(Self.quick(Array(d.utf8)) != nil, "\(d) is left to JSONDecoder")
        }
        for d in [#""\ud800""#, #"{"a": 1, "a": 2}"#, "9223372036854775808", "1e400", "[1,]"] {
            #expect(Self.quick(Array(d.utf8)) == nil, "\(d) takes the quick path")
        }
    }

    /// A random value: every JSON type, numbers of every shape.
    static func value(_ r: inout SplitMix, depth: Int = 0) -> JSONValue {
        switch r.next() % (depth > 2 ? 5 : 7) {
        case 0: return .null
        case 1: return .bool(r.next() % 2 == 0)
        case 2:
            let choices: [Int64] = [0, -1, 1, .max, .min, Int64(bitPattern: r.next()), Int64(r.next() % 1000)]
            return .int(choices[Int(r.next() % UInt64(choices.count))])
        case 3:
            let d = Double(bitPattern: r.next())
            return d.isFinite ? .double(d) : .double(Double(r.next() % 100_000) / 7)
        case 4: return .string(string(&r))
        case 5: return .array((0..<(r.next() % 4)).map { _ in value(&r, depth: depth + 1) })
        default:
            var o: [String: JSONValue] = [:]
            for _ in 0..<(r.next() % 4) { o[string(&r)] = value(&r, depth: depth + 1) }
            return .object(o)
        }
    }

    static func string(_ r: inout SplitMix) -> String {
        let pieces = ["a", "Trip", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "é", "日本", "😀", "\u{FFFD}", "'"]
        return (0..<(r.next() % 6)).map { _ in pieces[Int(r.next() % UInt64(pieces.count))] }.joined()
    }

    /// JSON text of `v`, written another way each time: spaces, `\u` escapes, `\/`.
    static func write(_ v: JSONValue, _ r: inout SplitMix, to out: inout String) {
        func space() { if r.next() % 3 == 0 { out += [" ", "\n", "\t", "\r\n  "][Int(r.next() % 4)] } }
        space()
        switch v {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i):
            out += r.next() % 5 == 0 && i > -(1 << 40) && i < 1 << 40 ? "\(i).0" : "\(i)"
        case .double(let d):
            out += r.next() % 2 == 0 ? "\(d)" : String(format: "%.17g", d)
        case .string(let s):
            out += "\""
            for u in s.unicodeScalars {
                switch u {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "/": out += r.next() % 2 == 0 ? "\\/" : "/"
                case _ where u.value < 0x20 || (u.value > 0x7F && u.value < 0x10000 && r.next() % 2 == 0):
                    out += String(format: "\\u%04x", u.value)
                default: out.unicodeScalars.append(u)
                }
            }
            out += "\""
        case .array(let items):
            out += "["
            for (k, item) in items.enumerated() {
                if k > 0 { out += "," }
                write(item, &r, to: &out)
            }
            space()
            out += "]"
        case .object(let members):
            out += "{"
            // In key order: a dictionary's order changes from run to run,
            // and with it the bodies this seed gives.
            for (k, (key, item)) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if k > 0 { out += "," }
                write(.string(key), &r, to: &out)
                space()
                out += ":"
                write(item, &r, to: &out)
            }
            space()
            out += "}"
        }
        space()
    }

    @Test("2,000 generated save and commit bodies: the quick path reads each as JSONDecoder does")
    func generated() throws {
        var r = SplitMix(seed: 32)
        var quickly = 0
        for n in 0..<2000 {
            var changes: [JSONValue] = []
            for _ in 0..<(r.next() % 5) {
                var change: [String: JSONValue] = [:]
                let kinds = ["insert", "update", "upsert", "replace", "delete"]
                change[kinds[Int(r.next() % 5)]] = r.next() % 20 == 0 ? Self.value(&r) : .string(Self.string(&r))
                if r.next() % 30 == 0 { change[kinds[Int(r.next() % 5)]] = "Trip" }
                for key in ["record", "set", "identifier", "if_token", "other"] where r.next() % 2 == 0 {
                    switch (key, r.next() % 10) {
                    case ("if_token", 1...): change[key] = .string("\(r.next() % 100)")
                    case ("record", 1...), ("set", 1...):
                        var o: [String: JSONValue] = [:]
                        for _ in 0..<(r.next() % 4) { o[Self.string(&r)] = Self.value(&r) }
                        change[key] = .object(o)
                    default: change[key] = Self.value(&r)
                    }
                }
                changes.append(r.next() % 40 == 0 ? Self.value(&r) : .object(change))
            }
            var body: [String: JSONValue] = [:]
            if r.next() % 20 != 0 { body["changes"] = .array(changes) }
            for key in ["author", "merge", "idempotency_key", "lease"] where r.next() % 2 == 0 {
                body[key] = r.next() % 8 == 0 ? Self.value(&r) : .string(Self.string(&r))
            }
            var text = ""
            Self.write(.object(body), &r, to: &text)
            let bytes = Array(text.utf8)
            quickly += agreeOnBodies(bytes, "body \(n): \(text)") ? 1 : 0
        }
        // Well-formed bodies are the common case: many go the quick way.
        print("quick bodies: \(quickly) of 2,000")
        #expect(quickly > 800)
    }

    /// The rule for a save's and a commit's body; whether both were read quickly (when valid).
    func agreeOnBodies(_ bytes: [UInt8], _ what: String) -> Bool {
        Self.agree(bytes, what)
        let tree = Self.quick(bytes)
        let save = try? JSONDecoder().decode(SaveBody.self, from: Data(bytes))
        let quickSave = tree.flatMap(SaveBody.init(json:))
        if let quickSave { #expect(quickSave == save && save != nil, "a save body read otherwise: \(what)") }
        let commit = try? JSONDecoder().decode(ProcessorCommitBody.self, from: Data(bytes))
        let quickCommit = tree.flatMap(ProcessorCommitBody.init(json:))
        if let quickCommit { #expect(quickCommit == commit && commit != nil, "a commit body read otherwise: \(what)") }
        // What JSONDecoder reads from a body this generator writes the quick path reads too.
        if save != nil, tree != nil { #expect(quickSave != nil, "a save body left to JSONDecoder: \(what)") }
        return quickSave != nil || quickCommit != nil
    }
}

extension SplitMix {
    /// 64 random bits.
    mutating func next() -> UInt64 { UInt64(next(1 << 32)) << 32 | UInt64(next(1 << 32)) }
}
