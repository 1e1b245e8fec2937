/// Writes JSON text by hand.
///
/// Hand-written rather than `JSONEncoder` because records and history are
/// streamed out row by row on the hot path of fetches and exports, where an
/// encoder's intermediate containers would cost more than the query.
package enum JSONText {
    /// The JSON string literal for `string`, quotes included.
    package static func quoted(_ string: String) -> String {
        var out = ""
        appendQuoted(string, to: &out)
        return out
    }

    /// The JSON array of `strings`: `["a","b"]`.
    package static func array(_ strings: [String]) -> String {
        var out = "["
        for (i, s) in strings.enumerated() {
            if i > 0 { out.append(",") }
            appendQuoted(s, to: &out)
        }
        out.append("]")
        return out
    }

    /// Appends the JSON string literal for `string` to `out`.
    package static func appendQuoted(_ string: String, to out: inout String) {
        out.append("\"")
        var needsEscape = false
        for byte in string.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
            needsEscape = true
            break
        }
        if !needsEscape {
            out.append(string)
            out.append("\"")
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case "\u{08}": out.append("\\b")
            case "\u{0C}": out.append("\\f")
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out.append("\"")
    }

    /// The JSON number for `double`; `null` for infinities and NaN, which
    /// JSON cannot represent.
    package static func number(_ double: Double) -> String {
        guard double.isFinite else { return "null" }
        if double == double.rounded(), abs(double) < 1e15 {
            return String(Int64(double)) + ".0"
        }
        return String(double)
    }

    /// The JSON text of a value; `json` fields are written raw when the
    /// caller says so.
    package static func append(_ value: Value, rawJSON: Bool = false, to out: inout String) {
        switch value {
        case .null: out.append("null")
        case .bool(let b): out.append(b ? "true" : "false")
        case .int(let i): out.append(String(i))
        case .double(let d): out.append(number(d))
        case .string(let s):
            if rawJSON { out.append(s) } else { appendQuoted(s, to: &out) }
        }
    }
}
