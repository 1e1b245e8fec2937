/// JSON (RFC 8259) scanned on bytes: whole values validated, strings
/// checked for UTF-8 and escapes, without building any tree.
///
/// Hand-written rather than on `JSONSerialization` or `JSONDecoder` because
/// the import runs it on every record and every `json` field: it allocates
/// nothing per value, is iterative (a deeply nested input cannot overflow the
/// stack), tells where a value ends in a buffer that holds only part of the
/// input, and says where and why a value is invalid.
enum JSONSyntax {
    /// The result of scanning from an index.
    enum Scan: Equatable {
        /// The value ends just before this index.
        case end(Int)
        /// The bytes run out before the value ends; the input has more.
        case needMore
        /// The value is invalid at this index, for this reason.
        case invalid(Int, String)
    }

    @inline(__always)
    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    /// The first index at or after `i` that is not JSON whitespace.
    @inline(__always)
    static func skipSpace(_ p: UnsafePointer<UInt8>, _ i: Int, _ limit: Int) -> Int {
        var i = i
        while i < limit, isSpace(p[i]) { i += 1 }
        return i
    }

    /// Whether `bytes` hold exactly one JSON value, with whitespace around it.
    ///
    /// - Returns: `nil` when valid, else the byte offset and the reason.
    static func validate(_ bytes: UnsafeBufferPointer<UInt8>) -> (offset: Int, reason: String)? {
        guard let p = bytes.baseAddress, !bytes.isEmpty else { return (0, "there is no value") }
        let start = skipSpace(p, 0, bytes.count)
        switch scanValue(p, start, bytes.count, complete: true) {
        case .end(let e):
            let rest = skipSpace(p, e, bytes.count)
            return rest == bytes.count ? nil : (rest, "text follows the value")
        case .invalid(let at, let reason):
            return (at, reason)
        case .needMore:
            return (bytes.count, "the value is not complete")
        }
    }

    /// Scans a string whose opening quote is at `i`.
    ///
    /// - Parameter escapes: set when the string holds backslash escapes.
    static func scanString(
        _ p: UnsafePointer<UInt8>, _ i: Int, _ limit: Int, complete: Bool,
        escapes: inout Bool
    ) -> Scan {
        var j = i + 1
        while true {
            // The common bytes first: plain ASCII.
            while j < limit {
                let c = p[j]
                if c == 0x22 || c == 0x5C || c < 0x20 || c >= 0x80 { break }
                j += 1
            }
            if j >= limit { return complete ? .invalid(j, "a string is not closed") : .needMore }
            let c = p[j]
            if c == 0x22 { return .end(j + 1) }
            if c == 0x5C {
                escapes = true
                guard j + 1 < limit else { return complete ? .invalid(j, "a string is not closed") : .needMore }
                switch p[j + 1] {
                case 0x22, 0x5C, 0x2F, 0x62, 0x66, 0x6E, 0x72, 0x74:
                    j += 2
                case 0x75:
                    guard j + 6 <= limit else {
                        return complete ? .invalid(j, "a \\u escape needs four hexadecimal digits") : .needMore
                    }
                    for k in 2..<6 where hexValue(p[j + k]) == nil {
                        return .invalid(j, "a \\u escape needs four hexadecimal digits")
                    }
                    j += 6
                default:
                    return .invalid(
                        j,
                        "\\\(Character(Unicode.Scalar(p[j + 1]))) is not a JSON escape "
                            + "(use \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX)")
                }
                continue
            }
            if c < 0x20 { return .invalid(j, "a control character must be escaped inside a string") }
            // A multi-byte UTF-8 sequence.
            let (count, lo, hi): (Int, UInt8, UInt8)
            switch c {
            case 0xC2...0xDF: (count, lo, hi) = (1, 0x80, 0xBF)
            case 0xE0: (count, lo, hi) = (2, 0xA0, 0xBF)
            case 0xE1...0xEC, 0xEE, 0xEF: (count, lo, hi) = (2, 0x80, 0xBF)
            case 0xED: (count, lo, hi) = (2, 0x80, 0x9F)
            case 0xF0: (count, lo, hi) = (3, 0x90, 0xBF)
            case 0xF1...0xF3: (count, lo, hi) = (3, 0x80, 0xBF)
            case 0xF4: (count, lo, hi) = (3, 0x80, 0x8F)
            default: return .invalid(j, "the text is not valid UTF-8")
            }
            guard j + count < limit else {
                if !complete { return .needMore }
                return .invalid(j, "the text is not valid UTF-8")
            }
            guard p[j + 1] >= lo, p[j + 1] <= hi else { return .invalid(j, "the text is not valid UTF-8") }
            var k = 2
            while k <= count {
                guard p[j + k] & 0xC0 == 0x80 else { return .invalid(j, "the text is not valid UTF-8") }
                k += 1
            }
            j += count + 1
        }
    }

    /// Scans a number starting at `i`.
    static func scanNumber(_ p: UnsafePointer<UInt8>, _ i: Int, _ limit: Int, complete: Bool) -> Scan {
        var j = i
        @inline(__always) func digit(_ k: Int) -> Bool { k < limit && p[k] &- 0x30 < 10 }
        @inline(__always) func cut(_ k: Int) -> Bool { k >= limit && !complete }
        if j < limit, p[j] == 0x2D { j += 1 }
        if cut(j) { return .needMore }
        guard j < limit else { return .invalid(j, "a number needs digits") }
        if p[j] == 0x30 {
            j += 1
        } else if p[j] &- 0x31 < 9 {
            while digit(j) { j += 1 }
        } else {
            return .invalid(j, "a number needs digits")
        }
        if cut(j) { return .needMore }
        if j < limit, p[j] == 0x2E {
            j += 1
            if cut(j) { return .needMore }
            guard digit(j) else { return .invalid(j, "a number needs digits after its decimal point") }
            while digit(j) { j += 1 }
            if cut(j) { return .needMore }
        }
        if j < limit, p[j] | 0x20 == 0x65 {
            j += 1
            if cut(j) { return .needMore }
            if j < limit, p[j] == 0x2B || p[j] == 0x2D { j += 1 }
            if cut(j) { return .needMore }
            guard digit(j) else { return .invalid(j, "a number needs digits in its exponent") }
            while digit(j) { j += 1 }
            if cut(j) { return .needMore }
        }
        return .end(j)
    }

    /// Scans `true`, `false` or `null` starting at `i`.
    static func scanLiteral(_ p: UnsafePointer<UInt8>, _ i: Int, _ limit: Int, complete: Bool) -> Scan {
        let word: StaticString
        switch p[i] {
        case 0x74: word = "true"
        case 0x66: word = "false"
        default: word = "null"
        }
        let w = word.utf8Start
        for k in 0..<word.utf8CodeUnitCount {
            if i + k >= limit { return complete ? .invalid(i, "expected a value") : .needMore }
            if p[i + k] != w[k] {
                return .invalid(i, "expected a value (a string, number, object, array, true, false or null)")
            }
        }
        return .end(i + word.utf8CodeUnitCount)
    }

    /// Scans one value of any kind starting at `i` (no leading whitespace).
    ///
    /// Iterative, with an explicit stack, so that nesting depth costs memory,
    /// not the thread's stack.
    static func scanValue(_ p: UnsafePointer<UInt8>, _ i: Int, _ limit: Int, complete: Bool) -> Scan {
        var stack: [UInt8] = []
        var i = i
        func more(_ at: Int, _ reason: String) -> Scan { complete ? .invalid(at, reason) : .needMore }
        value: while true {
            guard i < limit else { return more(i, "expected a value") }
            let c = p[i]
            switch c {
            case 0x7B, 0x5B:  // { [
                i = skipSpace(p, i + 1, limit)
                guard i < limit else {
                    return more(i, c == 0x7B ? "an object is not closed" : "an array is not closed")
                }
                if p[i] == c + 2 {  // } or ]
                    i += 1
                } else {
                    stack.append(c)
                    if c == 0x7B {
                        switch scanKey(p, &i, limit, complete: complete) {
                        case .end: continue value
                        case let other: return other
                        }
                    }
                    continue value
                }
            case 0x22:
                var escapes = false
                switch scanString(p, i, limit, complete: complete, escapes: &escapes) {
                case .end(let e): i = e
                case let other: return other
                }
            case 0x2D, 0x30...0x39:
                switch scanNumber(p, i, limit, complete: complete) {
                case .end(let e): i = e
                case let other: return other
                }
            case 0x74, 0x66, 0x6E:
                switch scanLiteral(p, i, limit, complete: complete) {
                case .end(let e): i = e
                case let other: return other
                }
            default:
                return .invalid(i, "expected a value (a string, number, object, array, true, false or null)")
            }
            // After a value: close containers or go on to the next element.
            while let top = stack.last {
                i = skipSpace(p, i, limit)
                guard i < limit else {
                    return more(i, top == 0x7B ? "an object is not closed" : "an array is not closed")
                }
                if p[i] == 0x2C {
                    i = skipSpace(p, i + 1, limit)
                    if top == 0x7B {
                        switch scanKey(p, &i, limit, complete: complete) {
                        case .end: break
                        case let other: return other
                        }
                    }
                    continue value
                }
                if p[i] == top + 2 {
                    stack.removeLast()
                    i += 1
                    continue
                }
                return .invalid(
                    i,
                    top == 0x7B
                        ? "expected , or } after an object member"
                        : "expected , or ] after an array element")
            }
            return .end(i)
        }
    }

    /// Scans `"key" :` and the whitespace after it, leaving `i` at the value.
    private static func scanKey(_ p: UnsafePointer<UInt8>, _ i: inout Int, _ limit: Int, complete: Bool) -> Scan {
        guard i < limit else { return complete ? .invalid(i, "an object is not closed") : .needMore }
        guard p[i] == 0x22 else { return .invalid(i, "expected a member name in double quotes") }
        var escapes = false
        switch scanString(p, i, limit, complete: complete, escapes: &escapes) {
        case .end(let e): i = skipSpace(p, e, limit)
        case let other: return other
        }
        guard i < limit else { return complete ? .invalid(i, "expected : after a member name") : .needMore }
        guard p[i] == 0x3A else { return .invalid(i, "expected : after a member name") }
        i = skipSpace(p, i + 1, limit)
        return .end(i)
    }

    @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x30...0x39: UInt32(c - 0x30)
        case 0x41...0x46: UInt32(c - 0x41 + 10)
        case 0x61...0x66: UInt32(c - 0x61 + 10)
        default: nil
        }
    }

    static func appendUTF8(_ v: UInt32, to out: inout [UInt8]) {
        switch v {
        case 0..<0x80:
            out.append(UInt8(v))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | (v >> 6)))
            out.append(UInt8(0x80 | (v & 0x3F)))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | (v >> 12)))
            out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (v & 0x3F)))
        default:
            out.append(UInt8(0xF0 | (v >> 18)))
            out.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
            out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (v & 0x3F)))
        }
    }

    /// Appends the content of a valid string's bytes (between its quotes),
    /// escapes resolved, as UTF-8; a lone surrogate becomes U+FFFD.
    static func unescape(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int, into out: inout [UInt8]) {
        var i = start
        func hex4(_ k: Int) -> UInt32 {
            (hexValue(p[k])! << 12) | (hexValue(p[k + 1])! << 8) | (hexValue(p[k + 2])! << 4) | hexValue(p[k + 3])!
        }
        while i < end {
            let c = p[i]
            guard c == 0x5C else {
                out.append(c)
                i += 1
                continue
            }
            let e = p[i + 1]
            switch e {
            case 0x62: out.append(0x08)
            case 0x66: out.append(0x0C)
            case 0x6E: out.append(0x0A)
            case 0x72: out.append(0x0D)
            case 0x74: out.append(0x09)
            case 0x75:
                var scalar = hex4(i + 2)
                i += 6
                if scalar >= 0xD800 && scalar < 0xDC00, i + 6 <= end, p[i] == 0x5C, p[i + 1] == 0x75 {
                    let low = hex4(i + 2)
                    if low >= 0xDC00 && low < 0xE000 {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
                    }
                }
                if (0xD800..<0xE000).contains(scalar) { scalar = 0xFFFD }
                appendUTF8(scalar, to: &out)
                continue
            default: out.append(e)  // " \ /
            }
            i += 2
        }
    }
}
