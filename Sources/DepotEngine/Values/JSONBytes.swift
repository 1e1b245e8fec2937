/// JSON written as UTF-8 bytes into a buffer the caller reuses.
///
/// Hand-written for the history's values on the import's hot path (one
/// object per record written): building a `String` per record with
/// ``JSONText`` cost a quarter of the import's time (bench/history-values).
package enum JSONBytes {
    /// Appends the JSON string literal for `string`.
    package static func appendQuoted(_ string: String, to out: inout [UInt8]) {
        out.append(0x22)
        var string = string
        string.withUTF8 { bytes in
            // Most text needs no escape: one copy.
            if !bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case 0x22: out.append(0x5C); out.append(0x22)
                case 0x5C: out.append(0x5C); out.append(0x5C)
                case 0x0A: out.append(0x5C); out.append(0x6E)
                case 0x0D: out.append(0x5C); out.append(0x72)
                case 0x09: out.append(0x5C); out.append(0x74)
                case 0x08: out.append(0x5C); out.append(0x62)
                case 0x0C: out.append(0x5C); out.append(0x66)
                case 0..<0x20:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                default: out.append(byte)
                }
            }
        }
        out.append(0x22)
    }

    /// Appends the JSON text of `value` as ``JSONText/append(_:rawJSON:to:)`` writes it.
    package static func append(_ value: Value, rawJSON: Bool = false, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b): out.append(contentsOf: b ? [0x74, 0x72, 0x75, 0x65] : [0x66, 0x61, 0x6C, 0x73, 0x65])
        case .int(let i): appendInteger(i, to: &out)
        case .double(let d): out.append(contentsOf: JSONText.number(d).utf8)
        case .string(let s):
            if rawJSON {
                var s = s
                s.withUTF8 { out.append(contentsOf: $0) }
            } else {
                appendQuoted(s, to: &out)
            }
        }
    }

    /// Appends the decimal digits of `i`.
    static func appendInteger(_ i: Int64, to out: inout [UInt8]) {
        if i < 0 { out.append(0x2D) }
        var magnitude = i.magnitude
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for k in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[k]) }
        }
    }
}
