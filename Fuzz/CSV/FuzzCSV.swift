// Built for testing only: in a debug build (the suite replays the kept
// inputs through it) or by scripts/fuzz (-enable-testing -DFUZZING). A plain
// release build (`swift build -c release`, which builds every target) compiles
// it empty (DepotFuzz then says so), since @testable imports need modules compiled for testing:
// that is what made release builds of a fresh clone fail (issue #13).
#if DEBUG || FUZZING
@testable import DepotEngine
public import FuzzSupport

/// Any bytes read as CSV: the same records and errors through a 1 MiB and a
/// 7-byte buffer, `line` following every error, and a reader resumed at a
/// place it gave reading exactly the rest. A trap, a hang, or a difference
/// is a finding.
enum CSVTarget {
    struct Item: Equatable { var text: String; var line: Int }

    static func read(
        _ path: String, delimiter: UInt8, escape: UInt8?, buffer: Int, cap: Int, offset: Int64 = 0, line: Int = 1
    ) -> (items: [Item], places: [(Int64, Int)]) {
        do {
            let reader = try CSVReader(
                path: path, delimiter: delimiter, escape: escape, offset: offset, line: line, bufferSize: buffer,
                maxRecordBytes: cap)
            var items: [Item] = []
            var places = [(reader.offset, reader.resumeLine)]
            while let item = try reader.next() {
                switch item {
                case .record:
                    items.append(
                        Item(
                            text: (0..<reader.fieldCount).map { reader.string($0) ?? "\u{0}" }.joined(
                                separator: "\u{1}"),
                            line: reader.line))
                case .malformed(let l, let reason):
                    if reader.line != l { Fuzz.fail("line \(reader.line) after an error on line \(l)") }
                    items.append(Item(text: "error: " + reason, line: l))
                }
                places.append((reader.offset, reader.resumeLine))
                if items.count > 1_000_000 { Fuzz.fail("the reader does not advance") }
            }
            return (items, places)
        } catch {
            Fuzz.fail("reading a readable file threw: \(error)")
        }
    }
}

func fuzzCSV(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    let path = Fuzz.scratchFile("csv", data, size)
    let delimiter: UInt8 = size > 0 && data[0] == 9 ? 9 : UInt8(ascii: ",")
    // Half of the inputs are read with a backslash escape (issue 51).
    let escape: UInt8? = size % 2 == 1 ? UInt8(ascii: "\\") : nil
    // A third of the inputs meet a small record cap, the rest the daemon's.
    let cap = size % 3 == 0 ? 256 : 64 << 20
    let whole = CSVTarget.read(
        path, delimiter: delimiter, escape: escape, buffer: size < 65_536 ? 65_536 : 1 << 20, cap: cap)
    let small = CSVTarget.read(path, delimiter: delimiter, escape: escape, buffer: size <= 4_096 ? 7 : 509, cap: cap)
    if whole.items != small.items { Fuzz.fail("a small buffer reads differently") }
    for k in Set([1, whole.places.count / 2, whole.places.count - 2]) where k > 0 && k < whole.places.count {
        let (offset, line) = whole.places[k]
        let rest = CSVTarget.read(
            path, delimiter: delimiter, escape: escape, buffer: size <= 4_096 ? 16 : 4_093, cap: cap, offset: offset,
            line: line)
        if rest.items != Array(whole.items[k...]) { Fuzz.fail("resumed after item \(k), the rest differs") }
    }
    return 0
}

/// The target as `DepotFuzz FuzzCSV` runs it.
public enum FuzzCSVEntry {

    /// Long and unbalanced input, up to 1 MB.
    public static let seeds: [[UInt8]] = [
        "a,b\n" + Fuzz.repeated("\"", 1) + Fuzz.repeated("x,\n", 250_000),
        "a,b\n" + Fuzz.repeated("x", 1_000_000),
        Fuzz.repeated("\"\"", 500_000),
        Fuzz.repeated(",", 1_000_000),
        Fuzz.repeated("\r", 500_000) + Fuzz.repeated("\n", 500_000),
        "\u{FEFF}id,name\r\n1,\"a\"\"b\"\r\n2,\"multi\nline\"\r\n3,x\"y\n\"open",
        "id,name\n1,\"H. \\\"B\\\" E\"\n2,\"a \\\\ b\",\"\\\n\"\n3,\"end\\",
        Fuzz.repeated("\"\\\"", 300_000)
    ].map { Array($0.utf8) }
    public static let body: Fuzz.Body = fuzzCSV
}

#endif
