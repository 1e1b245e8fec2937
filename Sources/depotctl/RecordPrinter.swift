import DepotClient
import Foundation

/// Renders `{"records": [...]}` or `{"sections": [...]}` in a format.
struct RecordPrinter {
    var format: String
    var fields: [String]

    func print(_ result: JSONValue) {
        if let sections = result["sections"]?.array {
            for (i, section) in sections.enumerated() {
                if format == "table" {
                    if i > 0 { Out.line() }
                    Out.line(
                        Terminal.bold("\(section["key"].map(\.display).map { $0.isEmpty ? "(none)" : $0 } ?? "")")
                            + Terminal.dim("  " + Self.plural(section["records"]?.array?.count ?? 0, "record")))
                }
                printRecords(section["records"]?.array ?? [], header: i == 0 || format == "table")
            }
        } else {
            printRecords(result["records"]?.array ?? [], header: true)
        }
    }

    static func plural(_ n: Int, _ noun: String) -> String { "\(Format.grouped(n)) \(noun)" + (n == 1 ? "" : "s") }

    func printRecords(_ records: [JSONValue], header: Bool) {
        switch format {
        case "ndjson":
            for r in records { Out.line(r.text(order: fields)) }
        case "csv":
            if header { Out.line(fields.map(Format.csvField).joined(separator: ",")) }
            for r in records {
                Out.line(
                    fields.map { f in
                        guard let v = r.value(at: f) else { return "" }
                        if case .string(let s) = v { return Format.csvField(s) }
                        return v == .null ? "" : Format.csvField(v.text)
                    }.joined(separator: ","))
            }
        default:
            var table = Table(fields)
            // Embedded records show as JSON; a key path (customer.name) picks out their values.
            for r in records { table.add(fields.map { r.value(at: $0)?.display ?? "" }) }
            for (i, f) in fields.enumerated()
            where records.contains(where: {
                if case .int = $0.value(at: f) ?? .null { return true }
                if case .double = $0.value(at: f) ?? .null { return true }
                return false
            }) { table.rightAligned.insert(i) }
            Out.line(records.isEmpty ? Terminal.dim("no records") : table.render())
        }
    }
}
