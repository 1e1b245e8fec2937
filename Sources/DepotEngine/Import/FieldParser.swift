import Foundation

/// Converts the raw bytes of an input field to a field's stored value.
///
/// Hand-written on bytes because it runs for every value of every imported
/// row; each failure says which field, which value and why.
enum FieldParser {
    struct Failure: Error {
        var reason: String
    }

    /// A reference to a target with a compound identifier, given as one
    /// JSON array (`["EU", 12]`, DESIGN §12), as the values of its columns.
    static func compoundReference(_ text: String, columns: [Field]) throws(Failure) -> [Value] {
        guard case .array(let values)? = MiniJSON.parse(text) else {
            throw Failure(reason: "is not a JSON array of the \(columns.count) values of the identifier it refers to")
        }
        guard values.count == columns.count else {
            throw Failure(
                reason: "has \(values.count) values; the identifier it refers to has \(columns.count) ("
                    + columns.map(\.name).joined(separator: ", ") + ")")
        }
        var out: [Value] = []
        for (v, field) in zip(values, columns) {
            do { out.append(try ValueConversion.convert(v, to: field)) } catch let e as DepotError {
                throw Failure(reason: e.message)
            } catch {
                throw Failure(reason: "\(error)")
            }
        }
        return out
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, as type: FieldType) throws(Failure) -> Value {
        switch type {
        case .string:
            guard let s = String(validating: bytes, as: UTF8.self) else {
                throw Failure(reason: "is not valid UTF-8")
            }
            return .string(s)
        case .int:
            guard let i = parseInt(bytes) else { throw Failure(reason: "is not an integer") }
            return .int(i)
        case .double:
            guard let d = parseDouble(bytes) else { throw Failure(reason: "is not a number") }
            return .double(d)
        case .bool:
            guard let b = parseBool(bytes) else { throw Failure(reason: "is not a boolean (true, false, 1 or 0)") }
            return .bool(b)
        case .date:
            guard let d = DateValue.canonical(utf8: trimmed(bytes)) else {
                throw Failure(reason: "is not an ISO 8601 date or date-time (like 2025-03-14 or 2025-03-14T09:30:00Z)")
            }
            return .string(d)
        case .json:
            if let (offset, reason) = JSONSyntax.validate(bytes) {
                throw Failure(reason: "is not valid JSON (at byte \(offset + 1): \(reason))")
            }
            return .string(String(decoding: bytes, as: UTF8.self))
        }
    }

    static func trimmed(_ b: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var lo = 0, hi = b.count
        while lo < hi, b[lo] == 0x20 || b[lo] == 0x09 { lo += 1 }
        while hi > lo, b[hi - 1] == 0x20 || b[hi - 1] == 0x09 { hi -= 1 }
        return UnsafeBufferPointer(rebasing: b[lo..<hi])
    }

    static func parseInt(_ raw: UnsafeBufferPointer<UInt8>) -> Int64? {
        let b = trimmed(raw)
        guard !b.isEmpty else { return nil }
        var i = 0
        var negative = false
        if b[0] == UInt8(ascii: "-") || b[0] == UInt8(ascii: "+") {
            negative = b[0] == UInt8(ascii: "-")
            i = 1
        }
        guard i < b.count else { return nil }
        var value: Int64 = 0
        while i < b.count {
            let d = b[i] &- 0x30
            guard d < 10 else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = negative ? m.subtractingReportingOverflow(Int64(d)) : m.addingReportingOverflow(Int64(d))
            guard !o1, !o2 else { return nil }
            value = s
            i += 1
        }
        return value
    }

    static func parseDouble(_ raw: UnsafeBufferPointer<UInt8>) -> Double? {
        let b = trimmed(raw)
        guard !b.isEmpty, b.count < 400 else { return nil }
        var digits = false
        for c in b {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits = true
            case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): break
            default: return nil
            }
        }
        guard digits else { return nil }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: b.count + 1) { buf -> Double? in
            for k in 0..<b.count { buf[k] = CChar(bitPattern: b[k]) }
            buf[b.count] = 0
            var end: UnsafeMutablePointer<CChar>?
            let d = strtod(buf.baseAddress!, &end)
            guard end == buf.baseAddress! + b.count, d.isFinite else { return nil }
            return d
        }
    }

    static func parseBool(_ raw: UnsafeBufferPointer<UInt8>) -> Bool? {
        let b = trimmed(raw)
        func equals(_ word: StaticString) -> Bool {
            guard b.count == word.utf8CodeUnitCount else { return false }
            let w = word.utf8Start
            for k in 0..<b.count where b[k] | 0x20 != w[k] { return false }
            return true
        }
        if equals("true") || equals("1") || equals("t") || equals("yes") { return true }
        if equals("false") || equals("0") || equals("f") || equals("no") { return false }
        return nil
    }
}

/// Latin-1 (ISO 8859-1) text to UTF-8: each byte is the code point of the
/// same number.
enum Latin1 {
    static func isASCII(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        for c in b where c >= 0x80 { return false }
        return true
    }

    static func utf8(_ b: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(b.count + b.count / 4)
        for c in b {
            if c < 0x80 {
                out.append(c)
            } else {
                out.append(0xC0 | (c >> 6))
                out.append(0x80 | (c & 0x3F))
            }
        }
        return out
    }
}
