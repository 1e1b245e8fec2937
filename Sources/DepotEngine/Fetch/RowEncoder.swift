import GRDB
import GRDBSQLite

/// Writes the current row of a SQLite statement as CSV or as a JSON object,
/// byte for byte what ``RecordSet/jsonObject(row:)`` and the daemon's CSV
/// export write for the same record, but straight from SQLite's column
/// buffers into a byte array.
///
/// Hand-written because exports and fetch pages spend their time here: going
/// through ``Value``s and `String`s cost an export of 5M trips four times
/// what `sqlite3 -csv` takes for the same file (BENCHMARKS.md, "Reads at
/// scale"). Text with bytes past ASCII goes through `String` once, so that
/// invalid UTF-8 is repaired exactly as the `Value` path repairs it.
package struct RowEncoder: Sendable {
    /// The fields of a row, in column order.
    package let fields: [Field]
    /// Their types, read per value without copying a ``Field``.
    private let types: [FieldType]
    /// `"name":` for each field, quoted once, end to end; field `i`'s ends at `keyEnds[i]`.
    private let keys: [UInt8]
    private let keyEnds: [Int]

    package init(fields: [Field]) {
        self.fields = fields
        types = fields.map(\.type)
        var keys: [UInt8] = []
        var ends: [Int] = []
        for f in fields {
            keys += Array((JSONText.quoted(f.name) + ":").utf8)
            ends.append(keys.count)
        }
        self.keys = keys
        keyEnds = ends
    }

    /// The CSV header line: the field names, quoted where CSV needs it, CRLF-terminated.
    package func csvHeader(to out: inout [UInt8]) {
        for (i, f) in fields.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            var name = f.name
            name.withUTF8 { Self.appendCSVText($0, to: &out) }
        }
        out.append(0x0D, 0x0A)
    }

    /// Row `statement`'s columns `first ..< first + fields.count` as one CSV
    /// line, CRLF-terminated: null is an empty field, the empty string `""`.
    package func appendCSV(_ statement: OpaquePointer, first: Int32 = 0, to out: inout [UInt8]) {
        for i in types.indices {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            let column = first + Int32(i)
            switch sqlite3_column_type(statement, column) {
            case SQLITE_NULL: break
            case SQLITE_INTEGER: Self.appendInteger(statement, column, types[i], to: &out)
            case SQLITE_FLOAT: Self.appendNumber(sqlite3_column_double(statement, column), to: &out)
            default: Self.withText(statement, column) { Self.appendCSVText($0, to: &out) }
            }
        }
        out.append(0x0D, 0x0A)
    }

    /// Row `statement`'s columns `first ..< first + fields.count` as one JSON
    /// object; `json` fields are embedded as JSON.
    package func appendJSON(_ statement: OpaquePointer, first: Int32 = 0, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        keys.withUnsafeBufferPointer { keys in
            var start = 0
            for i in types.indices {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: keys[start..<keyEnds[i]]))
                start = keyEnds[i]
                let column = first + Int32(i)
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL: Self.append("null", to: &out)
                case SQLITE_INTEGER: Self.appendInteger(statement, column, types[i], to: &out)
                case SQLITE_FLOAT: Self.appendNumber(sqlite3_column_double(statement, column), to: &out)
                default:
                    if types[i] == .json {
                        Self.withText(statement, column) { out.append(contentsOf: $0) }
                    } else {
                        Self.withText(statement, column) { Self.appendJSONText($0, to: &out) }
                    }
                }
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func append(_ text: StaticString, to out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    /// An integer column as ``SQL/column(_:_:as:)`` reads it: a bool, a
    /// double or an int, by the field's type.
    private static func appendInteger(
        _ statement: OpaquePointer, _ column: Int32, _ type: FieldType,
        to out: inout [UInt8]
    ) {
        let i = sqlite3_column_int64(statement, column)
        switch type {
        case .bool: append(i != 0 ? "true" : "false", to: &out)
        case .double: appendNumber(Double(i), to: &out)
        default: appendDecimal(i, to: &out)
        }
    }

    private static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value == .min {
            out.append(contentsOf: String(value).utf8)
            return
        }
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var v = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var n = 0
            repeat {
                digits[n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                n += 1
            } while v > 0
            while n > 0 {
                n -= 1
                out.append(digits[n])
            }
        }
    }

    /// ``JSONText/number(_:)``'s text (a short `String`, held inline).
    private static func appendNumber(_ d: Double, to out: inout [UInt8]) {
        if d.isFinite, d == d.rounded(), abs(d) < 1e15 {
            appendDecimal(Int64(d), to: &out)
            out.append(UInt8(ascii: "."), UInt8(ascii: "0"))
            return
        }
        var text = JSONText.number(d)
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// Calls `body` with the column's text as valid UTF-8: SQLite's own
    /// buffer when it is ASCII, else the bytes as `String(decoding:)` repairs them.
    private static func withText(
        _ statement: OpaquePointer, _ column: Int32,
        _ body: (UnsafeBufferPointer<UInt8>) -> Void
    ) {
        let n = Int(sqlite3_column_bytes(statement, column))
        guard n > 0, let p = sqlite3_column_text(statement, column) else {
            body(UnsafeBufferPointer(start: nil, count: 0))
            return
        }
        let bytes = UnsafeBufferPointer(start: p, count: n)
        if !bytes.contains(where: { $0 >= 0x80 }) {
            body(bytes)
            return
        }
        var text = String(decoding: bytes, as: UTF8.self)
        text.withUTF8 { body($0) }
    }

    /// `text` as a CSV field, quoted as ``appendCSV(_:first:to:)`` quotes it.
    /// A value as a CSV field: null is empty, the empty string `""`.
    package static func csvField(_ value: Value) -> String {
        switch value {
        case .null: ""
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): JSONText.number(d)
        case .string(let s): csvField(s)
        }
    }

    package static func csvField(_ text: String) -> String {
        var text = text
        var out: [UInt8] = []
        text.withUTF8 { appendCSVText($0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// A CSV field: `""` when empty, quoted with doubled quotes when it holds
    /// a comma, a quote or a line break, else as it is.
    private static func appendCSVText(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        if bytes.isEmpty {
            out.append(0x22, 0x22)
            return
        }
        // One comparison for most bytes: the four that need quoting are below 0x2D.
        guard bytes.contains(where: { $0 <= 0x2C && ($0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D) }) else {
            out.append(contentsOf: bytes)
            return
        }
        // Runs between quotes are copied whole; each quote is doubled.
        out.append(0x22)
        var start = 0
        for i in bytes.indices where bytes[i] == 0x22 {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...i]))
            out.append(0x22)
            start = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        out.append(0x22)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string literal, escaped as ``JSONText/appendQuoted(_:to:)`` escapes it.
    private static func appendJSONText(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(0x22)
        guard bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else {
            out.append(contentsOf: bytes)
            out.append(0x22)
            return
        }
        // Runs of bytes that need no escape are copied whole.
        var start = 0
        for i in bytes.indices {
            let b = bytes[i]
            guard b < 0x20 || b == 0x22 || b == 0x5C else { continue }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
            start = i + 1
            switch b {
            case 0x22: out.append(0x5C, 0x22)
            case 0x5C: out.append(0x5C, 0x5C)
            case 0x0A: out.append(0x5C, UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C, UInt8(ascii: "r"))
            case 0x09: out.append(0x5C, UInt8(ascii: "t"))
            case 0x08: out.append(0x5C, UInt8(ascii: "b"))
            case 0x0C: out.append(0x5C, UInt8(ascii: "f"))
            default:
                out.append(0x5C, UInt8(ascii: "u"))
                out.append(UInt8(ascii: "0"), UInt8(ascii: "0"))
                out.append(hex[Int(b >> 4)], hex[Int(b & 0xF)])
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        out.append(0x22)
    }
}

extension [UInt8] {
    /// Two bytes, without the array that `append(contentsOf: [a, b])` may allocate.
    fileprivate mutating func append(_ a: UInt8, _ b: UInt8) {
        append(a)
        append(b)
    }
}

/// How ``StoreReading/export(_:as:write:progress:)`` writes records.
public enum RecordFormat: String, Sendable, CaseIterable {
    /// A header line of field names, then one line per record (RFC 4180, CRLF).
    case csv
    /// One JSON object per line.
    case ndjson
}
