import Foundation

/// A run of parsed records, held packed and handed to the saves in
/// identifier order.
///
/// Why: an import's cost at scale is the identifier index. Its keys (UUIDs,
/// say) arrive in random order, so once the index outgrows the writer's page
/// cache nearly every record reads one index page from the file and dirties
/// it again. Written in identifier order, the records of a run visit the
/// index pages in order, each once per run (bench/run-import, BENCHMARKS.md
/// "Imports at scale"). The order is stable, so the last of several records
/// with one identifier is still written last and wins.
///
/// Written by hand, not with a library: the values are packed (a tag byte,
/// then 8 bytes or a length and UTF-8 bytes) so that a run of 64k records of
/// DESIGN §8's Trip takes about 12 MB rather than 28 MB as `[Value]`; the
/// run is sorted by comparing the packed identifiers in place, in SQLite's
/// order (NULL, numbers, then text by bytes), and unpacked chunk by chunk.
struct SortedRun {
    let columns: [String]
    /// The identifier's positions in `columns`; empty: kept in input order.
    private let identifier: [Int]
    private var bytes: [UInt8] = []
    /// Where each row's packed values start in `bytes`.
    private var starts: [Int] = []
    /// Where each row's identifier values start: `identifier.count` per row.
    private var keys: [Int] = []
    private var lines: [Int] = []
    /// The rows in the order they are handed out.
    private var order: [Int32] = []
    private var handedOut = 0

    /// The rejects of the run's records refused while parsing, and what the
    /// run took from the input; the last chunk carries them.
    var rejects: [RejectsFile.Entry] = []
    var read = 0
    var end: ParsedBatch?

    /// The records the run is meant to hold, for which it reserves memory
    /// once (growing by doubling would hold up to twice what it needs).
    private let expected: Int

    init(columns: [String], identifier: [String]?, expectedRows: Int) {
        self.columns = columns
        let positions = identifier.map { $0.compactMap { columns.firstIndex(of: $0) } } ?? []
        self.identifier = positions.count == identifier?.count ? positions : []
        expected = expectedRows
        starts.reserveCapacity(expectedRows)
        lines.reserveCapacity(expectedRows)
        keys.reserveCapacity(expectedRows * self.identifier.count)
    }

    /// The records held.
    var count: Int { starts.count }

    /// Adds a parsed chunk's records, rejects and place in the input.
    mutating func append(_ parsed: ParsedBatch) {
        precondition(parsed.batch.columns == columns, "a run holds records of one shape")
        let width = columns.count
        var at = [Int](repeating: 0, count: width)
        parsed.batch.values.withUnsafeBufferPointer { all in
            for r in 0..<parsed.batch.count {
                starts.append(bytes.count)
                for c in 0..<width {
                    at[c] = bytes.count
                    pack(all[r * width + c])
                }
                for c in identifier { keys.append(at[c]) }
                if starts.count == 64, bytes.capacity < expected * 64 {
                    // From the first records' size, with an eighth to spare.
                    bytes.reserveCapacity(bytes.count / 64 * expected * 9 / 8)
                }
            }
        }
        lines += parsed.lines
        rejects += parsed.rejects
        read += parsed.read
        // Its place in the input, without holding its records twice.
        var place = parsed
        place.batch = RecordBatch(entity: parsed.batch.entity, columns: columns)
        place.lines = []
        place.rejects = []
        end = place
    }

    private mutating func pack(_ value: Value) {
        switch value {
        case .null: bytes.append(0)
        case .bool(let b): bytes.append(b ? 2 : 1)
        case .int(let i):
            bytes.append(3)
            withUnsafeBytes(of: i.littleEndian) { bytes.append(contentsOf: $0) }
        case .double(let d):
            bytes.append(4)
            withUnsafeBytes(of: d.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case .string(let s):
            bytes.append(5)
            Self.appendLength(s.utf8.count, to: &bytes)
            if s.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
                bytes.append(contentsOf: s.utf8)
            }
        }
    }

    /// Puts the rows in identifier order, stable (the input's order among
    /// equal identifiers), or leaves them in input order without an identifier.
    mutating func sort() {
        order = (0..<Int32(count)).map { $0 }
        guard !identifier.isEmpty else { return }
        let k = identifier.count
        bytes.withUnsafeBufferPointer { buf in
            keys.withUnsafeBufferPointer { keys in
                order.sort { a, b in
                    let ai = Int(a) * k, bi = Int(b) * k
                    for j in 0..<k {
                        let c = Self.compare(buf, keys[ai + j], buf, keys[bi + j])
                        if c != 0 { return c < 0 }
                    }
                    return a < b
                }
            }
        }
    }

    /// Appends the run's rows to `out` in their sorted order, each as its
    /// length, its line and its packed values (``MergedRun``'s spilled
    /// form), calling `flush` whenever `out` holds a megabyte or more.
    func spill(into out: inout [UInt8], flush: (inout [UInt8]) throws -> Void) throws {
        for r in order {
            let r = Int(r)
            let from = starts[r]
            let to = r + 1 < starts.count ? starts[r + 1] : bytes.count
            Self.appendLength(to - from, to: &out)
            Self.appendLength(lines[r], to: &out)
            out.append(contentsOf: bytes[from..<to])
            if out.count >= 1 << 20 { try flush(&out) }
        }
    }

    /// Appends `n` as a varint: seven bits a byte, the high bit set on all
    /// but the last.
    static func appendLength(_ n: Int, to out: inout [UInt8]) {
        var n = n
        while n >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: n) | 0x80)
            n >>= 7
        }
        out.append(UInt8(n))
    }

    /// Where the packed value at `at` ends.
    static func skip(_ buf: UnsafeBufferPointer<UInt8>, _ at: Int) -> Int {
        switch buf[at] {
        case 0, 1, 2: return at + 1
        case 3, 4: return at + 9
        default:
            let (n, from) = length(buf, at + 1)
            return from + n
        }
    }

    /// Skips the first `rows` of the sorted order: a job resumed inside
    /// this run (``ImportCheckpoint/runWritten``) wrote them before it
    /// stopped. The run is the one it read then (the same records from the
    /// same place, sorted by the same stable order), so these are the same rows.
    mutating func skip(_ rows: Int) {
        handedOut = min(rows, order.count)
    }

    /// Whether rows remain to be handed out.
    var hasMore: Bool { end != nil }

    /// The next (at most) `max` rows in order, unpacked; the last chunk
    /// carries the run's rejects, records read and end in the input, and is
    /// the only one a save may end after.
    mutating func nextChunk(max: Int) -> ParsedBatch {
        let upTo = min(order.count, handedOut + max)
        var batch = RecordBatch(entity: end?.batch.entity ?? "", columns: columns, reservingCapacity: upTo - handedOut)
        var chunkLines: [Int] = []
        chunkLines.reserveCapacity(upTo - handedOut)
        var row: [Value] = []
        row.reserveCapacity(columns.count)
        bytes.withUnsafeBufferPointer { buf in
            for i in handedOut..<upTo {
                let r = Int(order[i])
                var at = starts[r]
                row.removeAll(keepingCapacity: true)
                for _ in 0..<columns.count { row.append(Self.unpack(buf, &at)) }
                batch.append(row)
                chunkLines.append(lines[r])
            }
        }
        handedOut = upTo
        let last = handedOut == order.count ? end : nil
        if last != nil { end = nil }
        return Self.chunk(batch, lines: chunkLines, handedOut: handedOut, last: last, rejects: rejects, read: read)
    }

    /// A chunk of a run's rows: one inside the run (no place in the input
    /// lies between its rows, which come from all over the run), or, given
    /// the run's `last` place in the input, the run's last chunk, which
    /// carries the run's rejects and records read and is the only one a
    /// save may end after at a place in the input.
    static func chunk(
        _ batch: RecordBatch, lines: [Int], handedOut: Int, last: ParsedBatch?, rejects: [RejectsFile.Entry],
        read: Int
    ) -> ParsedBatch {
        guard var last else {
            return ParsedBatch(
                batch: batch, lines: lines, rejects: [], read: 0, endOffset: 0, endLine: 0,
                endLineStart: 0, atEnd: false, boundary: false, runHandedOut: handedOut)
        }
        last.batch = batch
        last.lines = lines
        last.rejects = rejects
        last.read = read
        last.boundary = true
        return last
    }

    static func unpack(_ buf: UnsafeBufferPointer<UInt8>, _ at: inout Int) -> Value {
        let tag = buf[at]
        at += 1
        switch tag {
        case 0: return .null
        case 1: return .bool(false)
        case 2: return .bool(true)
        case 3, 4:
            var bits: UInt64 = 0
            for i in 0..<8 { bits |= UInt64(buf[at + i]) << (8 * i) }
            at += 8
            return tag == 3 ? .int(Int64(bitPattern: bits)) : .double(Double(bitPattern: bits))
        default:
            let (n, from) = length(buf, at)
            at = from + n
            return .string(String(decoding: UnsafeBufferPointer(rebasing: buf[from..<from + n]), as: UTF8.self))
        }
    }

    static func length(_ buf: UnsafeBufferPointer<UInt8>, _ at: Int) -> (Int, Int) {
        var n = 0, shift = 0, i = at
        while true {
            let b = buf[i]
            i += 1
            n |= Int(b & 0x7F) << shift
            if b < 0x80 { return (n, i) }
            shift += 7
        }
    }

    /// SQLite's order of two packed values, at `a` of `bufA` and `b` of
    /// `bufB`: NULL first, then numbers by value, then text by its bytes
    /// (the BINARY collation).
    static func compare(
        _ bufA: UnsafeBufferPointer<UInt8>, _ a: Int, _ bufB: UnsafeBufferPointer<UInt8>, _ b: Int
    ) -> Int {
        let ta = bufA[a], tb = bufB[b]
        let ca = ta == 0 ? 0 : ta < 5 ? 1 : 2, cb = tb == 0 ? 0 : tb < 5 ? 1 : 2
        if ca != cb { return ca - cb }
        switch ca {
        case 0: return 0
        case 1:
            var pa = a, pb = b
            let va = unpack(bufA, &pa), vb = unpack(bufB, &pb)
            if case .int(let x) = va, case .int(let y) = vb { return x < y ? -1 : x == y ? 0 : 1 }
            let x = number(va), y = number(vb)
            return x < y ? -1 : x == y ? 0 : 1
        default:
            let (na, fa) = length(bufA, a + 1), (nb, fb) = length(bufB, b + 1)
            let c = memcmp(bufA.baseAddress! + fa, bufB.baseAddress! + fb, min(na, nb))
            if c != 0 { return Int(c) }
            return na - nb
        }
    }

    private static func number(_ v: Value) -> Double {
        switch v {
        case .bool(let b): b ? 1 : 0
        case .int(let i): Double(i)
        case .double(let d): d
        default: 0
        }
    }
}
