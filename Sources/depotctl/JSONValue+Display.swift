import DepotClient

extension JSONValue {
    /// How a table cell shows the value.
    var display: String {
        switch self {
        case .null: return ""
        case .string(let s): return s
        case .int(let i): return Format.grouped(Int(i))
        case .double(let d): return Format.decimal(d)
        // A to-many's values (lines.sku): one after the other.
        case .array(let items)
        where items.allSatisfy({ if case .object = $0 { false } else if case .array = $0 { false } else { true } }):
            return items.map(\.display).joined(separator: ", ")
        default: return text
        }
    }
}
