/// Reads RFC 4180 CSV (or another single-byte-delimited text) record by
/// record, in memory independent of the file's size.
///
/// Hand-written on bytes, not on a CSV library, because it is the import's
/// hot path and must also say, for a malformed record, which line it starts
/// on and then go on with the next one. It reads:
/// - quoted fields with `""` escapes and line breaks inside, and, with an
///   `escape` byte (`\`), quotes written `\"` inside them (`\\` for the
///   escape itself), as MySQL and many exporters write them;
/// - CRLF, LF or bare CR record ends, mixed;
/// - a UTF-8 byte order mark at the start, which it drops.
///
/// An empty unquoted field is null and a quoted empty field (`""`) is the
/// empty string, as PostgreSQL's `COPY … CSV` reads them. Blank lines are
/// skipped. A record longer than ``maxRecordBytes`` (a quote left open in a
/// large file makes the rest of the file one record) is reported malformed
/// and skipped to the end of the line it starts on, so memory stays bounded.
///
/// For example:
///
/// ```swift
/// let reader = try CSVReader(path: "trips.csv")
/// while let item = try reader.next() {
///     guard case .record = item else { continue }
///     print(reader.line, reader.string(0) ?? "null")
/// }
/// ```
final class CSVReader {
    /// What `next()` found.
    enum Item: Equatable {
        /// A record; read its fields from the reader.
        case record
        /// A record that is not valid CSV, starting at `line`.
        case malformed(line: Int, reason: String)
    }

    private struct Slot {
        var start: Int
        var end: Int
        var quoted: Bool
        var escapes: Bool
    }

    private let file: InputFile
    private let delimiter: UInt8
    private let quote: UInt8
    /// The byte before a quote (or itself) inside a quoted field that makes
    /// it text; `nil`: only `""` does.
    private let escape: UInt8?
    private let skipInitialSpace: Bool
    private let lenientQuotes: Bool
    /// The longest record read whole; longer ones are malformed.
    let maxRecordBytes: Int
    private var buffer: UnsafeMutableRawBufferPointer
    private var begin = 0  // first unconsumed byte
    private var end = 0  // one past the last valid byte
    private var atEOF = false
    private var slots: [Slot] = []
    /// The byte offset in the file of `buffer[0]`.
    private var bufferOffset: Int64

    /// The line on which the last record starts (1-based).
    private(set) var line: Int
    /// The line on which the next record starts.
    private var nextLine: Int
    /// The byte offset just after the last record: where a resumed read starts.
    private(set) var offset: Int64

    /// The line on which the next record starts: where a resumed read starts counting.
    var resumeLine: Int { nextLine }

    /// The number of fields of the last record.
    var fieldCount: Int { slots.count }

    /// The file's size.
    var size: Int64 { file.size }

    /// Opens `path` for reading at `offset`, whose first record starts on `line`.
    ///
    /// With `lenientQuotes`, a quote inside a field that does not start with
    /// one is literal text, as PostgreSQL reads it; strict RFC 4180 (the
    /// default) rejects such a record. `quote` is the quoting byte (`"`, or
    /// `'` for files written so); with `skipInitialSpace`, spaces after a
    /// delimiter are dropped, so that `a, "b, c"` reads two fields. With
    /// `escape`, `\"` inside a quoted field is a quote and `\\` a backslash.
    init(
        path: String, delimiter: UInt8 = UInt8(ascii: ","), quote: UInt8 = UInt8(ascii: "\""),
        escape: UInt8? = nil, skipInitialSpace: Bool = false, lenientQuotes: Bool = false, offset: Int64 = 0,
        line: Int = 1, bufferSize: Int = 1 << 20, maxRecordBytes: Int = 64 << 20
    ) throws {
        file = try InputFile(path: path, offset: offset)
        self.delimiter = delimiter
        self.quote = quote
        self.escape = escape == quote ? nil : escape
        self.skipInitialSpace = skipInitialSpace
        self.lenientQuotes = lenientQuotes
        self.maxRecordBytes = maxRecordBytes
        buffer = InputFile.allocate(bufferSize)
        bufferOffset = offset
        self.offset = offset
        self.line = line
        self.nextLine = line
        slots.reserveCapacity(64)
        if offset == 0 {
            try fill()
            if end >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { begin = 3 }
        }
    }

    deinit { buffer.deallocate() }

    /// Moves the unconsumed bytes to the front and reads more; grows the
    /// buffer when one record fills it.
    private func fill() throws {
        if try file.refill(&buffer, begin: &begin, end: &end, bufferOffset: &bufferOffset) { atEOF = true }
    }

    /// Reads the next record; `nil` at the end of the file.
    func next() throws -> Item? {
        while true {
            switch scan() {
            case .needMore:
                // Too long a record first, whether or not the file ends here,
                // so that every buffer size reads the same.
                if end - begin > maxRecordBytes { return try tooLong() }
                if atEOF {
                    // Only an unterminated quote leaves bytes behind at EOF:
                    // the record starts on `nextLine` and takes the rest.
                    let start = nextLine
                    line = start
                    consume(to: end, lines: lineBreaks(begin, end))
                    return .malformed(line: start, reason: "a quoted field is not closed before the end of the file")
                }
                try fill()
            case .blank(let next, let lines):
                consume(to: next, lines: lines)
            case .done:
                return nil
            case .record(let next, _) where next - begin > maxRecordBytes:
                return try tooLong()
            case .malformed(let next, _, _) where next - begin > maxRecordBytes:
                return try tooLong()
            case .record(let next, let lines):
                line = nextLine
                unescape()
                consume(to: next, lines: lines)
                return .record
            case .malformed(let next, let lines, let reason):
                let start = nextLine
                line = start
                consume(to: next, lines: lines)
                return .malformed(line: start, reason: reason)
            }
        }
    }

    /// A record longer than `maxRecordBytes`, whether or not it is all in
    /// the buffer (so that every buffer size reads the same): malformed, and
    /// skipped to the end of the line it starts on.
    private func tooLong() throws -> Item {
        let start = nextLine
        line = start
        try skipLine()
        return .malformed(
            line: start,
            reason: "the record is longer than \(InputFile.size(maxRecordBytes)) "
                + "(is a quote left open?); it is skipped to the end of the line it starts on")
    }

    /// Consumes up to the first line feed from `begin`, reading on (and
    /// discarding, so the buffer does not grow) as far as it takes.
    private func skipLine() throws {
        while true {
            var i = begin
            while i < end, buffer[i] != 0x0A { i += 1 }
            if i < end {
                consume(to: i + 1, lines: 1)
                return
            }
            consume(to: end, lines: 0)
            if atEOF { return }
            try fill()
        }
    }

    /// The line breaks (LF, CRLF or a lone CR) in `buffer[from..<to]`.
    private func lineBreaks(_ from: Int, _ to: Int) -> Int {
        var n = 0
        var i = from
        while i < to {
            if buffer[i] == 0x0A || (buffer[i] == 0x0D && !(i + 1 < to && buffer[i + 1] == 0x0A)) { n += 1 }
            i += 1
        }
        return n
    }

    private func consume(to next: Int, lines: Int) {
        begin = next
        nextLine += lines
        offset = bufferOffset + Int64(next)
    }

    private enum Scan {
        case needMore
        case done
        case blank(next: Int, lines: Int)
        case record(next: Int, lines: Int)
        case malformed(next: Int, lines: Int, reason: String)
    }

    /// Finds the next record's fields without changing any byte, so that it
    /// can start over after `fill()`.
    private func scan() -> Scan {
        let quote = self.quote
        let escape = self.escape
        let lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        let delimiter = self.delimiter
        let b = buffer
        let end = self.end
        var i = begin
        var lines = 0
        slots.removeAll(keepingCapacity: true)
        if i == end { return atEOF ? .done : .needMore }
        // A blank line.
        if b[i] == lf { return .blank(next: i + 1, lines: 1) }
        if b[i] == cr {
            if i + 1 == end && !atEOF { return .needMore }
            return .blank(next: (i + 1 < end && b[i + 1] == lf) ? i + 2 : i + 1, lines: 1)
        }
        /// Where the line (after a malformed field) ends, for skipping it.
        func skipLine(from j: Int, reason: String) -> Scan {
            var k = j
            while k < end, b[k] != lf, b[k] != cr { k += 1 }
            if k == end {
                if !atEOF { return .needMore }
                return .malformed(next: end, lines: lines, reason: reason)
            }
            if b[k] == cr {
                if k + 1 == end && !atEOF { return .needMore }
                if k + 1 < end && b[k + 1] == lf { k += 1 }
            }
            return .malformed(next: k + 1, lines: lines + 1, reason: reason)
        }
        while true {
            // Start of a field at i.
            if skipInitialSpace {
                while i < end, b[i] == 0x20 { i += 1 }
                if i == end && !atEOF { return .needMore }
            }
            if i < end, b[i] == quote {
                var j = i + 1
                var escapes = false
                while true {
                    if j >= end { return .needMore }
                    let c = b[j]
                    if c == escape {
                        // The next byte, whatever it is, is text.
                        // (At the end of the file: a quote left open.)
                        if j + 1 >= end { return .needMore }
                        escapes = true
                        if b[j + 1] == lf { lines += 1 }
                        j += 2
                        continue
                    }
                    if c == quote {
                        if j + 1 >= end && !atEOF { return .needMore }
                        if j + 1 < end && b[j + 1] == quote {
                            escapes = true
                            j += 2
                            continue
                        }
                        break
                    }
                    if c == lf { lines += 1 } else if c == cr, !(j + 1 < end && b[j + 1] == lf) { lines += 1 }
                    j += 1
                }
                slots.append(Slot(start: i + 1, end: j, quoted: true, escapes: escapes))
                i = j + 1
                if i < end, b[i] != delimiter, b[i] != lf, b[i] != cr {
                    return skipLine(
                        from: i,
                        reason: "text follows the closing quote of field \(slots.count); "
                            + "a quote inside a quoted field is written as \"\"")
                }
            } else {
                var j = i
                while j < end {
                    let c = b[j]
                    if c == delimiter || c == lf || c == cr { break }
                    if c == quote && !lenientQuotes {
                        return skipLine(
                            from: j,
                            reason: "field \(slots.count + 1) has a quote but does not start "
                                + "with one; quote the whole field and write the quote as \"\"")
                    }
                    j += 1
                }
                if j == end && !atEOF { return .needMore }
                slots.append(Slot(start: i, end: j, quoted: false, escapes: false))
                i = j
            }
            // After a field: a delimiter, a record end, or the end of the file.
            if i == end {
                if !atEOF { return .needMore }
                return .record(next: end, lines: lines)
            }
            let c = b[i]
            if c == delimiter {
                i += 1
                if i == end {
                    if !atEOF { return .needMore }
                    slots.append(Slot(start: end, end: end, quoted: false, escapes: false))
                    return .record(next: end, lines: lines)
                }
                continue
            }
            if c == lf { return .record(next: i + 1, lines: lines + 1) }
            // CR: a CRLF pair or a bare CR.
            if i + 1 == end && !atEOF { return .needMore }
            return .record(next: (i + 1 < end && b[i + 1] == lf) ? i + 2 : i + 1, lines: lines + 1)
        }
    }

    /// Turns `""` into `"` (and `\x` into `x` with an escape byte) in the
    /// fields that have them, in place.
    private func unescape() {
        let quote = self.quote
        let escape = self.escape
        for s in slots.indices where slots[s].escapes {
            var r = slots[s].start, w = r
            let stop = slots[s].end
            while r < stop {
                if buffer[r] == escape, r + 1 < stop {
                    buffer[w] = buffer[r + 1]
                    r += 2
                } else {
                    buffer[w] = buffer[r]
                    r += buffer[r] == quote ? 2 : 1
                }
                w += 1
            }
            slots[s].end = w
        }
    }

    /// Whether field `i` of the last record is null (empty and unquoted).
    func isNull(_ i: Int) -> Bool {
        let s = slots[i]
        return !s.quoted && s.start == s.end
    }

    /// Whether field `i` of the last record was quoted.
    func isQuoted(_ i: Int) -> Bool { slots[i].quoted }

    /// Calls `body` with the bytes of field `i` of the last record.
    func withBytes<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        let s = slots[i]
        let raw = UnsafeRawBufferPointer(rebasing: buffer[s.start..<s.end])
        return try body(raw.bindMemory(to: UInt8.self))
    }

    /// Field `i` as a string, `nil` for null; invalid UTF-8 is repaired with U+FFFD.
    func string(_ i: Int) -> String? {
        if isNull(i) { return nil }
        return withBytes(i) { String(decoding: $0, as: UTF8.self) }
    }
}
