// Built for testing only: in a debug build (the suite replays the kept
// inputs through it) or by scripts/fuzz (-enable-testing -DFUZZING). A plain
// release build (`swift build -c release`, which builds every target) compiles
// it empty (DepotFuzz then says so), since @testable imports need modules compiled for testing:
// that is what made release builds of a fresh clone fail (issue #13).
#if DEBUG || FUZZING
@testable import DepotEngine
public import FuzzSupport

/// Any bytes read as JSON records (NDJSON or an array, up to 1 MB and nested
/// without bound): the same records and errors through a 1 MiB and a 7-byte
/// buffer, and a reader resumed at a place it gave before it finished
/// reading exactly the rest, with the same lines and columns. Each record's
/// members must read back. A trap, a hang, or a difference is a finding.
enum JSONTarget {
    struct Item: Equatable { var text: String; var line: Int }
    struct Place { var offset: Int64; var line: Int; var lineStart: Int64; var finished: Bool }

    static func read(_ path: String, buffer: Int, cap: Int, from place: Place? = nil) -> (
        items: [Item], places: [Place]
    ) {
        do {
            let reader = try JSONRecordReader(
                path: path, offset: place?.offset ?? 0, line: place?.line ?? 1,
                lineStart: place?.lineStart, bufferSize: buffer, maxRecordBytes: cap)
            var items: [Item] = []
            var places = [
                Place(
                    offset: reader.offset, line: reader.resumeLine, lineStart: reader.resumeLineStart, finished: false)
            ]
            while let item = try reader.next() {
                switch item {
                case .record:
                    let members = (0..<reader.members.count).map { m in
                        reader.withKey(m) { String(decoding: $0, as: UTF8.self) } + "\u{1}" + reader.rawValue(m)
                    }
                    items.append(Item(text: members.joined(separator: "\u{2}"), line: reader.line))
                case .malformed(let l, let reason):
                    if reader.line != l { Fuzz.fail("line \(reader.line) after an error on line \(l)") }
                    items.append(Item(text: "error: " + reason, line: l))
                }
                places.append(
                    Place(
                        offset: reader.offset, line: reader.resumeLine, lineStart: reader.resumeLineStart,
                        finished: reader.isFinished))
                if items.count > 1_000_000 { Fuzz.fail("the reader does not advance") }
            }
            return (items, places)
        } catch {
            Fuzz.fail("reading a readable file threw: \(error)")
        }
    }
}

func fuzzJSON(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    let path = Fuzz.scratchFile("json", data, size)
    // A third of the inputs meet a small line and element cap, the rest the daemon's.
    let cap = size % 3 == 0 ? 256 : 64 << 20
    let whole = JSONTarget.read(path, buffer: size < 65_536 ? 65_536 : 1 << 20, cap: cap)
    let small = JSONTarget.read(path, buffer: size <= 4_096 ? 7 : 509, cap: cap)
    if whole.items != small.items { Fuzz.fail("a small buffer reads differently") }
    for k in Set([1, whole.places.count / 2, whole.places.count - 2]) where k > 0 && k < whole.places.count {
        let place = whole.places[k]
        if place.finished { continue }
        let rest = JSONTarget.read(path, buffer: size <= 4_096 ? 16 : 4_093, cap: cap, from: place)
        if rest.items != Array(whole.items[k...]) { Fuzz.fail("resumed after item \(k), the rest differs") }
    }
    // Field conversion of whatever the members hold must not trap either.
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = text.utf8.withContiguousStorageIfAvailable { bytes in
        for type in [FieldType.json, .int, .double, .date, .bool, .string] {
            _ = try? FieldParser.parse(bytes, as: type)
        }
    }
    return 0
}

/// The target as `DepotFuzz FuzzJSON` runs it.
public enum FuzzJSONEntry {

    /// Deep nesting and long input, up to 1 MB.
    public static let seeds: [[UInt8]] = [
        Fuzz.repeated("[", 1_000_000),
        "[" + Fuzz.repeated("{\"a\":", 150_000) + "1" + Fuzz.repeated("}", 150_000) + "]",
        "{\"a\":" + Fuzz.repeated("[", 500_000) + Fuzz.repeated("]", 500_000) + "}",
        "[" + Array(repeating: "{\"a\": 1}", count: 80_000).joined(separator: ",") + "]",
        "[{\"a\": 1}]" + Fuzz.repeated("x", 1_000_000),
        Fuzz.repeated("{\"a\": \"\\u00e9\"}\n", 50_000),
        "\u{FEFF}[{\"a\": 1},\n {\"a\": tru},\n 42,\n]junk"
    ].map { Array($0.utf8) }
    public static let body: Fuzz.Body = fuzzJSON
}

#endif
