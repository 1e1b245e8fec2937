import DepotEngine
import Foundation

/// CSV output: null is an empty field, the empty string is `""`.
enum CSVText {
    static func field(_ s: String) -> String {
        if s.isEmpty { return "\"\"" }
        if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return s
    }

    static func field(_ v: Value) -> String {
        switch v {
        case .null: return ""
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return JSONText.number(d)
        case .string(let s): return field(s)
        }
    }
}
