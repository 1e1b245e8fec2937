package import DepotWire

/// A JSON document read into a ``JSONValue`` tree straight from its bytes,
/// for the request bodies that carry many changes (a save's, a processor
/// commit's).
///
/// Hand-written, on ``JSONSyntax``'s strict scanner, rather than left to
/// `JSONDecoder`: on a processor's commits (500 changes a body) decoding
/// with `JSONDecoder` took 18% of the daemon's time (issue #32's profile).
/// It gives what `JSONValue`'s `Decodable` gives, or nil for anything it
/// does not read exactly so — invalid JSON, a number written with an
/// exponent whose value is whole (`1e2`; `100.0` is read as `JSONDecoder`
/// reads it, an integer), an integer beyond `Int64`, a number out of a
/// double's range, a `\u` escape of a surrogate, a member name given twice, nesting
/// deeper than ``deepest``: the caller decodes those with `JSONDecoder`,
/// which also words the errors. `QuickBodyTests` and `FuzzAPIBody` hold it
/// to that.
package enum JSONTree {
    /// The deepest nesting read here (recursively: a deeper document goes
    /// to `JSONDecoder`, whose own limit answers it).
    static let deepest = 64

    /// The value `bytes` hold, or nil (see ``JSONTree``).
    package static func parse(_ bytes: UnsafeRawBufferPointer) -> JSONValue? {
        let bytes = bytes.bindMemory(to: UInt8.self)
        guard let p = bytes.baseAddress, JSONSyntax.validate(bytes) == nil else { return nil }
        var reader = Reader(p: p, limit: bytes.count)
        return reader.value(depth: 0)
    }

    /// Reads a document ``JSONSyntax`` has validated.
    private struct Reader {
        let p: UnsafePointer<UInt8>
        let limit: Int
        var i = 0

        mutating func space() { i = JSONSyntax.skipSpace(p, i, limit) }

        mutating func value(depth: Int) -> JSONValue? {
            space()
            switch p[i] {
            case UInt8(ascii: "{"):
                guard depth < JSONTree.deepest else { return nil }
                i += 1
                space()
                var members: [String: JSONValue] = [:]
                if p[i] == UInt8(ascii: "}") {
                    i += 1
                    return .object(members)
                }
                while true {
                    space()
                    guard let key = string() else { return nil }
                    space()
                    i += 1  // :
                    guard let v = value(depth: depth + 1), members.updateValue(v, forKey: key) == nil else {
                        return nil
                    }
                    space()
                    i += 1
                    if p[i - 1] == UInt8(ascii: "}") { return .object(members) }
                }
            case UInt8(ascii: "["):
                guard depth < JSONTree.deepest else { return nil }
                i += 1
                space()
                var items: [JSONValue] = []
                if p[i] == UInt8(ascii: "]") {
                    i += 1
                    return .array(items)
                }
                while true {
                    guard let v = value(depth: depth + 1) else { return nil }
                    items.append(v)
                    space()
                    i += 1
                    if p[i - 1] == UInt8(ascii: "]") { return .array(items) }
                }
            case UInt8(ascii: "\""):
                return string().map(JSONValue.string)
            case UInt8(ascii: "t"):
                i += 4
                return .bool(true)
            case UInt8(ascii: "f"):
                i += 5
                return .bool(false)
            case UInt8(ascii: "n"):
                i += 4
                return .null
            default:
                return number()
            }
        }

        /// The string whose opening quote is at `i`; nil for a surrogate's escape.
        mutating func string() -> String? {
            var escapes = false
            guard case .end(let end) = JSONSyntax.scanString(p, i, limit, complete: true, escapes: &escapes) else {
                return nil
            }
            let start = i + 1
            i = end
            let content = UnsafeBufferPointer(start: p + start, count: end - 1 - start)
            guard escapes else { return String(decoding: content, as: UTF8.self) }
            var k = start
            while k < end - 1 {
                if p[k] == UInt8(ascii: "\\") {
                    // \uD800–\uDFFF: left to JSONDecoder (pairs and lone ones alike).
                    if p[k + 1] == UInt8(ascii: "u"), p[k + 2] | 0x20 == UInt8(ascii: "d"),
                        let h = JSONSyntax.hexValue(p[k + 3]), h >= 8
                    {
                        return nil
                    }
                    k += 2
                } else {
                    k += 1
                }
            }
            var out: [UInt8] = []
            out.reserveCapacity(content.count)
            JSONSyntax.unescape(p, start, end - 1, into: &out)
            return String(decoding: out, as: UTF8.self)
        }

        /// The number at `i`: an integer written as one or with a fraction
        /// of zeros, or a double that is not whole; nil for others.
        mutating func number() -> JSONValue? {
            guard case .end(let end) = JSONSyntax.scanNumber(p, i, limit, complete: true) else { return nil }
            let text = UnsafeBufferPointer(start: p + i, count: end - i)
            i = end
            var (point, exponent, zeros) = (-1, false, true)
            for (k, c) in text.enumerated() {
                if c == UInt8(ascii: ".") {
                    point = k
                } else if c | 0x20 == UInt8(ascii: "e") {
                    exponent = true
                } else if point >= 0, c != UInt8(ascii: "0") {
                    zeros = false
                }
            }
            if !exponent, point < 0 || zeros {
                // An integer, or one written `100.0` (JSONDecoder reads it as
                // an integer): at most 18 characters cannot overflow; longer
                // ones are parsed checked.
                let digits = point < 0 ? text : UnsafeBufferPointer(rebasing: text[..<point])
                if digits.count <= 18 {
                    var n: Int64 = 0
                    for c in digits where c != UInt8(ascii: "-") { n = n * 10 + Int64(c &- 0x30) }
                    return .int(digits[0] == UInt8(ascii: "-") ? -n : n)
                }
                return Int64(String(decoding: digits, as: UTF8.self)).map(JSONValue.int)
            }
            // A whole value written otherwise (`1e2`, `0.5e1`): how JSONDecoder
            // reads it is its own.
            guard let d = Double(String(decoding: text, as: UTF8.self)), d.isFinite, d != d.rounded(.towardZero)
            else { return nil }
            return .double(d)
        }
    }
}
