import DepotEngine
import Foundation

/// CSV output: null is an empty field, the empty string is `""`.
enum CSVText {
    /// Quoted when it holds a comma, a quote, CR or LF, looked for as bytes:
    /// as `Character`s, a CRLF is neither `"\r"` nor `"\n"`, and went out unquoted.
    static func field(_ s: String) -> String { RowEncoder.csvField(s) }

    /// The columns of `set`'s rows: its fields, then each prefetched to-one's
    /// columns under its name (`customer.name`), and each to-many as one
    /// column holding a JSON array of its records.
    static func header(_ set: RecordSet, prefix: String = "") -> [String] {
        var out = set.fields.filter { !set.isEmbedded($0) }.map { prefix + $0.name }
        for e in set.embedded {
            if e.isToMany {
                out.append(prefix + e.name)
            } else {
                out += header(e.records, prefix: prefix + e.name + ".")
            }
        }
        return out
    }

    /// The cells of row `row` of `set` under ``header(_:prefix:)``; a row of
    /// `nil` (a to-one that points at nothing) leaves them empty.
    static func cells(_ set: RecordSet, row: Int?, into out: inout [String]) {
        for (i, f) in set.fields.enumerated() where !set.isEmbedded(f) {
            out.append(row.map { field(set.rows[$0][i]) } ?? "")
        }
        for e in set.embedded {
            let members = row.map { e.members[$0] } ?? []
            if e.isToMany {
                out.append(field("[" + members.map(e.records.jsonObject(row:)).joined(separator: ",") + "]"))
            } else {
                cells(e.records, row: members.first, into: &out)
            }
        }
    }

    static func field(_ v: Value) -> String { RowEncoder.csvField(v) }
}
