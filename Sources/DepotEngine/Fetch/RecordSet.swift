

/// Fetched records: the fields fetched and one row of values per record.
public struct RecordSet: Sendable, Hashable {
    /// The fields of each row, in order.
    public var fields: [Field]
    /// The records, each one value per field.
    public var rows: [[Value]]
    /// Related records embedded in each row (prefetch, DESIGN §12), in the
    /// order the relationships were named.
    public var embedded: [EmbeddedRecords] = []

    /// The number of records.
    public var count: Int { rows.count }

    /// The value of `field` in row `row`, or `nil` when the field was not fetched.
    public func value(_ field: String, row: Int) -> Value? {
        fields.firstIndex { $0.name == field }.map { rows[row][$0] }
    }

    /// Row `row` as one JSON object; `json` fields are embedded as JSON,
    /// and so are prefetched records: an object (or null) for a to-one, an
    /// array for a to-many.
    public func jsonObject(row: Int) -> String {
        var out = ""
        appendJSON(row: row, to: &out)
        return out
    }

    private func appendJSON(row: Int, to out: inout String) {
        out.append("{")
        var first = true
        for (i, field) in fields.enumerated() where !isEmbedded(field) {
            if !first { out.append(",") }
            first = false
            JSONText.appendQuoted(field.name, to: &out)
            out.append(":")
            JSONText.append(rows[row][i], rawJSON: field.type == .json, to: &out)
        }
        for e in embedded {
            if !first { out.append(",") }
            first = false
            JSONText.appendQuoted(e.name, to: &out)
            out.append(":")
            let members = e.members[row]
            if e.isToMany {
                out.append("[")
                for (k, m) in members.enumerated() {
                    if k > 0 { out.append(",") }
                    e.records.appendJSON(row: m, to: &out)
                }
                out.append("]")
            } else if let m = members.first {
                e.records.appendJSON(row: m, to: &out)
            } else {
                out.append("null")
            }
        }
        out.append("}")
    }

    /// Whether `field` is the column of a to-one whose record is embedded
    /// under the same name: the record stands in its place.
    public func isEmbedded(_ field: Field) -> Bool {
        !embedded.isEmpty && embedded.contains { !$0.isToMany && $0.name == field.name }
    }

    /// The rows at `indexes`, in that order, with their embedded records.
    public func subset(_ indexes: [Int]) -> RecordSet {
        var out = RecordSet(fields: fields, rows: indexes.map { rows[$0] })
        out.embedded = embedded.map { e in
            var e = e
            e.members = indexes.map { e.members[$0] }
            return e
        }
        return out
    }

    /// The rows with only their first `count` values (what was selected
    /// beyond the fields, for prefetching, goes).
    mutating func trim(to count: Int) {
        guard let first = rows.first, first.count > count else { return }
        rows = rows.map { Array($0.prefix(count)) }
    }
}

/// Records sharing one value of the section field.
public struct RecordSection: Sendable, Hashable {
    /// The section field's value.
    public var key: Value
    /// The section's records.
    public var records: RecordSet
}
