/// Reads JSON records (objects) one by one from NDJSON (one object per line)
/// or from a JSON array of objects, in memory independent of the file's size.
///
/// The layout is told by the first byte that is not whitespace: `[` starts an
/// array, anything else is read as NDJSON. A record that is not valid JSON,
/// holds invalid UTF-8 or is not an object is returned as `.malformed` with
/// the line it starts on, and reading goes on with the next one: in NDJSON at
/// the next line, in an array after the next `,` at the array's own level.
/// A multi-gigabyte array is read element by element, never whole. A line or
/// an element longer than ``maxRecordBytes`` is reported malformed: a line
/// is skipped, an array is not read past it; memory stays bounded.
///
/// Hand-written on bytes (see ``JSONSyntax``) because it is the hot path of
/// NDJSON imports and must report and skip bad records, which no JSON
/// library here does.
final class JSONRecordReader {
    /// What `next()` found.
    enum Item: Equatable {
        /// A record; read its members from the reader.
        case record
        /// A record that cannot be read, starting at `line`.
        case malformed(line: Int, reason: String)
    }

    /// How the records are laid out in the file.
    enum Layout: Equatable {
        case lines
        case array
    }

    /// The kind of a member's value.
    enum Kind: UInt8 {
        case string, number, `true`, `false`, null, object, array
    }

    struct Member {
        var keyStart: Int
        var keyEnd: Int
        var keyEscapes: Bool
        var kind: Kind
        /// For a string, its content between the quotes; else the value's text.
        var valueStart: Int
        var valueEnd: Int
        var valueEscapes: Bool
    }

    private enum ArrayState {
        case open, first, element, after, tail, done
    }

    private let file: InputFile
    let layout: Layout
    private var buffer: UnsafeMutableRawBufferPointer
    private var base: UnsafeMutablePointer<UInt8> { buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) }
    private var begin = 0
    private var end = 0
    private var atEOF = false
    private var bufferOffset: Int64
    private var arrayState: ArrayState
    private(set) var members: [Member] = []
    private var scratch: [UInt8] = []

    /// The line on which the last record starts (1-based).
    private(set) var line: Int
    /// The line of the byte at `begin`.
    private var nextLine: Int
    /// The file offset where line `nextLine` starts.
    private var lineStart: Int64
    /// The byte offset just after the last record: where a resumed read starts.
    private(set) var offset: Int64
    /// The line of the byte at `offset`.
    private(set) var resumeLine: Int
    /// The file offset where line `resumeLine` starts, so that a resumed
    /// read gives the same columns as a whole one.
    private(set) var resumeLineStart: Int64
    /// Whether the input is read to its end: nothing more will come, and
    /// ``offset`` is no longer a place to resume at.
    private(set) var isFinished = false
    /// The longest line or array element read whole.
    let maxRecordBytes: Int
    /// Set by `resync()` when the stretch to skip is longer than `maxRecordBytes`.
    private var resyncTooLong = false

    /// Opens `path` at `offset`, on `line`, which starts at file offset
    /// `lineStart`: 0, or a place this reader gave (``offset``,
    /// ``resumeLine``, ``resumeLineStart``) before it finished. A resumed
    /// read gives exactly what the whole read gave after that place.
    init(
        path: String, offset: Int64 = 0, line: Int = 1, lineStart: Int64? = nil, bufferSize: Int = 1 << 20,
        maxRecordBytes: Int = 64 << 20
    ) throws {
        self.maxRecordBytes = maxRecordBytes
        // The layout comes from the file's first significant byte, after a
        // byte order mark (only a whole one, at the very start).
        let head = try InputFile(path: path)
        var first: UInt8 = 0
        var firstOffset: Int64 = 0
        var probe = [UInt8](repeating: 0, count: 4096)
        var probed: Int64 = 0
        probeLoop: while true {
            let n = try probe.withUnsafeMutableBytes { try head.read(into: $0.baseAddress!, count: $0.count) }
            if n == 0 { break }
            var k = 0
            if probed == 0, n >= 3, probe[0] == 0xEF, probe[1] == 0xBB, probe[2] == 0xBF { k = 3 }
            while k < n {
                if !JSONSyntax.isSpace(probe[k]) {
                    first = probe[k]
                    firstOffset = probed + Int64(k)
                    break probeLoop
                }
                k += 1
            }
            probed += Int64(n)
        }
        layout = first == 0x5B ? .array : .lines
        file = try InputFile(path: path, offset: offset)
        buffer = InputFile.allocate(bufferSize)
        bufferOffset = offset
        self.offset = offset
        self.line = line
        self.nextLine = line
        self.resumeLine = line
        self.lineStart = lineStart ?? offset
        self.resumeLineStart = lineStart ?? offset
        // Up to the opening bracket nothing was read; after it, a resumed
        // read stands after an element (or at the `,` or `]` that follows it).
        arrayState = offset <= firstOffset ? .open : .after
        members.reserveCapacity(32)
        if offset == 0 {
            try fill()
            if end >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF {
                begin = 3
                self.offset = 3
                self.lineStart = 3
                self.resumeLineStart = 3
            }
        }
    }

    deinit { buffer.deallocate() }

    /// The file's size.
    var size: Int64 { file.size }

    private func fill() throws {
        if try file.refill(&buffer, begin: &begin, end: &end, bufferOffset: &bufferOffset) { atEOF = true }
    }

    /// Makes the byte at buffer index `i` (whose line `nextLine` starts at
    /// `lineStart`) the place a resumed read starts.
    private func resume(at i: Int) {
        offset = bufferOffset + Int64(i)
        resumeLine = nextLine
        resumeLineStart = lineStart
    }

    /// Counts the line feeds in `base[from..<to]` into `nextLine` and `lineStart`.
    private func advance(_ from: Int, _ to: Int) {
        let p = base
        var i = from
        while i < to {
            if p[i] == 0x0A {
                nextLine += 1
                lineStart = bufferOffset + Int64(i + 1)
            }
            i += 1
        }
    }

    /// "line L, column C" of the byte at `at`, for a record starting at
    /// `start` on line `startLine`, which began at file offset `lineStart`.
    private func place(_ at: Int, start: Int, startLine: Int) -> String {
        var first = lineStart
        var n = 0
        let p = base
        var i = start
        while i < at && i < end {
            if p[i] == 0x0A {
                n += 1
                first = bufferOffset + Int64(i + 1)
            }
            i += 1
        }
        return "line \(startLine + n), column \(bufferOffset + Int64(at) - first + 1)"
    }

    /// Reads the next record; `nil` at the end of the input.
    func next() throws -> Item? {
        let item =
            switch layout {
            case .lines: try readLineRecord()
            case .array: try readArrayElement()
            }
        if item == nil || arrayState == .done { isFinished = true }
        return item
    }

    // MARK: NDJSON

    private func readLineRecord() throws -> Item? {
        while true {
            if begin == end {
                if atEOF { return nil }
                try fill()
                continue
            }
            let p = base
            var lineEnd = begin
            while lineEnd < end, p[lineEnd] != 0x0A { lineEnd += 1 }
            if lineEnd == end && !atEOF {
                if end - begin > maxRecordBytes { return try skipLongLine() }
                try fill()
                continue
            }
            // Too long a line is one whether or not it is all in the buffer.
            if lineEnd - begin > maxRecordBytes { return try skipLongLine() }
            let following = lineEnd < end ? lineEnd + 1 : end
            let start = JSONSyntax.skipSpace(p, begin, lineEnd)
            let recordLine = nextLine
            defer {
                begin = following
                nextLine += 1
                lineStart = bufferOffset + Int64(following)
                resume(at: following)
            }
            if start == lineEnd { continue }  // a blank line
            line = recordLine
            if p[start] != 0x7B {
                if case .invalid(let at, let reason) = JSONSyntax.scanValue(p, start, lineEnd, complete: true) {
                    return .malformed(
                        line: recordLine,
                        reason: "invalid JSON at \(place(at, start: start, startLine: recordLine)): \(reason)")
                }
                return .malformed(
                    line: recordLine,
                    reason: "the line holds a JSON value that is not an object; "
                        + "each line of NDJSON must be one object")
            }
            switch parseObject(start, lineEnd, complete: true) {
            case .end(let e):
                let rest = JSONSyntax.skipSpace(p, e, lineEnd)
                if rest != lineEnd {
                    return .malformed(
                        line: recordLine,
                        reason: "invalid JSON at \(place(rest, start: start, startLine: recordLine)): "
                            + "text follows the object; each line of NDJSON must be one object")
                }
                return .record
            case .invalid(let at, let reason):
                return .malformed(
                    line: recordLine,
                    reason: "invalid JSON at \(place(at, start: start, startLine: recordLine)): \(reason)")
            case .needMore:
                return .malformed(line: recordLine, reason: "the object is not complete")
            }
        }
    }

    /// Reports a line longer than `maxRecordBytes` and consumes it, reading
    /// on (and discarding, so the buffer does not grow) to its end.
    private func skipLongLine() throws -> Item {
        let recordLine = nextLine
        line = recordLine
        while true {
            var i = begin
            while i < end, base[i] != 0x0A { i += 1 }
            if i < end || atEOF {
                let following = i < end ? i + 1 : end
                begin = following
                nextLine += 1
                lineStart = bufferOffset + Int64(following)
                resume(at: following)
                break
            }
            begin = end
            try fill()
        }
        return .malformed(
            line: recordLine,
            reason: "the line is longer than \(InputFile.size(maxRecordBytes)); "
                + "each line of NDJSON must be one object")
    }

    /// Reports an array element longer than `maxRecordBytes`; the rest of
    /// the array is not read (where it ends cannot be found without reading
    /// the element whole).
    private func tooLong(line recordLine: Int) -> Item {
        line = recordLine
        arrayState = .done
        begin = end
        offset = max(bufferOffset + Int64(end), file.size)
        resumeLine = nextLine
        resumeLineStart = lineStart
        return .malformed(
            line: recordLine,
            reason: "the array element is longer than \(InputFile.size(maxRecordBytes)); "
                + "the rest of the array is not read")
    }

    // MARK: JSON array

    private func readArrayElement() throws -> Item? {
        while true {
            let p = base
            // Whitespace between tokens.
            var i = begin
            while i < end, JSONSyntax.isSpace(p[i]) { i += 1 }
            advance(begin, i)
            begin = i
            if i == end {
                if !atEOF {
                    try fill()
                    continue
                }
                switch arrayState {
                case .open, .tail, .done:
                    arrayState = .done
                    resume(at: begin)
                    return nil
                case .first, .element, .after:
                    arrayState = .done
                    line = nextLine
                    resume(at: begin)
                    return .malformed(
                        line: nextLine, reason: "the JSON array is not closed with ] before the end of the file")
                }
            }
            let c = p[i]
            switch arrayState {
            case .done:
                return nil
            case .open:
                guard c == 0x5B else {
                    return trailing(at: i, reason: "a JSON import is an array of objects or NDJSON")
                }
                begin = i + 1
                arrayState = .first
                continue
            case .tail:
                return trailing(at: i, reason: "text follows the closing ] of the array")
            case .after:
                if c == 0x2C {
                    begin = i + 1
                    arrayState = .element
                    continue
                }
                if c == 0x5D {
                    begin = i + 1
                    arrayState = .tail
                    continue
                }
                let recordLine = nextLine
                line = recordLine
                let reason =
                    "invalid JSON at \(place(i, start: i, startLine: recordLine)): expected , or ] after an array element"
                guard let item = try skipBadElement(from: bufferOffset + Int64(i), line: recordLine, reason: reason)
                else {
                    continue
                }
                return item
            case .first, .element:
                if c == 0x5D {
                    if arrayState == .first {
                        begin = i + 1
                        arrayState = .tail
                        continue
                    }
                    let recordLine = nextLine
                    line = recordLine
                    // A resumed read starts at the `]` (after an element, as
                    // it were), so that it reads what follows the same way.
                    resume(at: i)
                    begin = i + 1
                    arrayState = .tail
                    return .malformed(
                        line: recordLine,
                        reason: "invalid JSON at \(place(i, start: i, startLine: recordLine)): "
                            + "a comma before ] (trailing commas are not JSON)")
                }
                let recordLine = nextLine
                let scan =
                    c == 0x7B
                    ? parseObject(i, end, complete: atEOF)
                    : JSONSyntax.scanValue(p, i, end, complete: atEOF)
                switch scan {
                case .needMore:
                    if end - i > maxRecordBytes { return tooLong(line: recordLine) }
                    try fill()
                    continue
                case .end(let e) where e - i > maxRecordBytes:
                    return tooLong(line: recordLine)
                case .end(let e):
                    line = recordLine
                    advance(i, e)
                    begin = e
                    arrayState = .after
                    resume(at: e)
                    if c != 0x7B {
                        return .malformed(
                            line: recordLine,
                            reason: "the array element is a JSON value that is not an object; "
                                + "each element must be one object")
                    }
                    return .record
                case .invalid(let at, let reason):
                    line = recordLine
                    let message = "invalid JSON at \(place(at, start: i, startLine: recordLine)): \(reason)"
                    guard
                        let item = try skipBadElement(from: bufferOffset + Int64(i), line: recordLine, reason: message)
                    else {
                        continue
                    }
                    return item
                }
            }
        }
    }

    /// Reports text after the array (or instead of it) once, then ends:
    /// the rest of the file, however long, is not read.
    private func trailing(at i: Int, reason: String) -> Item {
        let recordLine = nextLine
        line = recordLine
        arrayState = .done
        let item = Item.malformed(
            line: recordLine, reason: "invalid JSON at \(place(i, start: i, startLine: recordLine)): \(reason)")
        begin = end
        offset = max(bufferOffset + Int64(end), file.size)
        resumeLine = nextLine
        resumeLineStart = lineStart
        return item
    }

    /// Skips a bad element that starts at file offset `skipStart`: the
    /// malformed item (`reason`), or a too-long one when the stretch skipped
    /// passes `maxRecordBytes`; `nil` when more must be read first.
    private func skipBadElement(from skipStart: Int64, line recordLine: Int, reason: String) throws -> Item? {
        guard try resync() else { return resyncTooLong ? tooLong(line: recordLine) : nil }
        if bufferOffset + Int64(begin) - skipStart > Int64(maxRecordBytes) { return tooLong(line: recordLine) }
        return .malformed(line: recordLine, reason: reason)
    }

    /// Skips a bad element: on to the next `,` or `]` at the array's level,
    /// reading strings and brackets loosely. Returns false when it needs more
    /// bytes first (the caller reads them and tries again).
    private func resync() throws -> Bool {
        resyncTooLong = false
        let p = base
        var depth = 0
        var inString = false
        var i = begin
        while i < end {
            let c = p[i]
            if inString {
                if c == 0x5C { i += 2; continue }
                if c == 0x22 { inString = false }
                if c == 0x0A { inString = false }  // a broken string ends at its line
            } else {
                switch c {
                case 0x22: inString = true
                case 0x7B, 0x5B: depth += 1
                case 0x7D, 0x5D:
                    if depth == 0 && c == 0x5D {
                        finishSkip(to: i, state: .after)
                        return true
                    }
                    depth = max(0, depth - 1)
                case 0x2C where depth == 0:
                    finishSkip(to: i, state: .after)
                    return true
                default: break
                }
            }
            i += 1
        }
        if !atEOF {
            // Judged before more is read, so that every buffer size agrees.
            if end - begin > maxRecordBytes {
                resyncTooLong = true
                return false
            }
            try fill()
            return false
        }
        finishSkip(to: end, state: .done)
        return true
    }

    private func finishSkip(to i: Int, state: ArrayState) {
        advance(begin, i)
        begin = i
        arrayState = state
        resume(at: i)
    }

    // MARK: Objects

    /// Parses an object at `i` into `members`.
    private func parseObject(_ i: Int, _ limit: Int, complete: Bool) -> JSONSyntax.Scan {
        let p = UnsafePointer(base)
        members.removeAll(keepingCapacity: true)
        func more(_ at: Int, _ reason: String) -> JSONSyntax.Scan { complete ? .invalid(at, reason) : .needMore }
        var i = JSONSyntax.skipSpace(p, i + 1, limit)
        guard i < limit else { return more(i, "the object is not closed") }
        if p[i] == 0x7D { return .end(i + 1) }
        while true {
            guard i < limit else { return more(i, "the object is not closed") }
            guard p[i] == 0x22 else { return .invalid(i, "expected a member name in double quotes") }
            var keyEscapes = false
            let keyEnd: Int
            switch JSONSyntax.scanString(p, i, limit, complete: complete, escapes: &keyEscapes) {
            case .end(let e): keyEnd = e
            case let other: return other
            }
            var member = Member(
                keyStart: i + 1, keyEnd: keyEnd - 1, keyEscapes: keyEscapes, kind: .null,
                valueStart: 0, valueEnd: 0, valueEscapes: false)
            i = JSONSyntax.skipSpace(p, keyEnd, limit)
            guard i < limit else { return more(i, "expected : after a member name") }
            guard p[i] == 0x3A else { return .invalid(i, "expected : after a member name") }
            i = JSONSyntax.skipSpace(p, i + 1, limit)
            guard i < limit else { return more(i, "expected a value") }
            let scan: JSONSyntax.Scan
            switch p[i] {
            case 0x22:
                member.kind = .string
                var escapes = false
                scan = JSONSyntax.scanString(p, i, limit, complete: complete, escapes: &escapes)
                member.valueEscapes = escapes
            case 0x2D, 0x30...0x39:
                member.kind = .number
                scan = JSONSyntax.scanNumber(p, i, limit, complete: complete)
            case 0x74:
                member.kind = .true
                scan = JSONSyntax.scanLiteral(p, i, limit, complete: complete)
            case 0x66:
                member.kind = .false
                scan = JSONSyntax.scanLiteral(p, i, limit, complete: complete)
            case 0x6E:
                member.kind = .null
                scan = JSONSyntax.scanLiteral(p, i, limit, complete: complete)
            case 0x7B, 0x5B:
                member.kind = p[i] == 0x7B ? .object : .array
                scan = JSONSyntax.scanValue(p, i, limit, complete: complete)
            default:
                return .invalid(i, "expected a value (a string, number, object, array, true, false or null)")
            }
            guard case .end(let valueEnd) = scan else { return scan }
            if member.kind == .string {
                member.valueStart = i + 1
                member.valueEnd = valueEnd - 1
            } else {
                member.valueStart = i
                member.valueEnd = valueEnd
            }
            members.append(member)
            i = JSONSyntax.skipSpace(p, valueEnd, limit)
            guard i < limit else { return more(i, "the object is not closed") }
            if p[i] == 0x2C {
                i = JSONSyntax.skipSpace(p, i + 1, limit)
                continue
            }
            if p[i] == 0x7D { return .end(i + 1) }
            return .invalid(i, "expected , or } after an object member")
        }
    }

    /// Calls `body` with member `m`'s name, escapes resolved.
    func withKey<T>(_ m: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        let member = members[m]
        return try content(member.keyStart, member.keyEnd, member.keyEscapes, body)
    }

    /// Calls `body` with member `m`'s value: a string's content with escapes
    /// resolved, or the text of any other value.
    func withValue<T>(_ m: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        let member = members[m]
        return try content(member.valueStart, member.valueEnd, member.valueEscapes, body)
    }

    /// Member `m`'s value as JSON text (a string with its quotes).
    func rawValue(_ m: Int) -> String {
        let member = members[m]
        let (s, e) =
            member.kind == .string
            ? (member.valueStart - 1, member.valueEnd + 1)
            : (member.valueStart, member.valueEnd)
        return String(decoding: UnsafeBufferPointer(start: base + s, count: e - s), as: UTF8.self)
    }

    private func content<T>(
        _ start: Int, _ end: Int, _ escapes: Bool,
        _ body: (UnsafeBufferPointer<UInt8>) throws -> T
    ) rethrows -> T {
        if !escapes { return try body(UnsafeBufferPointer(start: base + start, count: end - start)) }
        scratch.removeAll(keepingCapacity: true)
        JSONSyntax.unescape(base, start, end, into: &scratch)
        return try scratch.withUnsafeBufferPointer(body)
    }
}
