

/// Fetched records: the fields fetched and one row of values per record.
public struct RecordSet: Sendable, Hashable {
    /// The fields of each row, in order.
    public var fields: [Field]
    /// The records, each one value per field.
    public var rows: [[Value]]

    /// The number of records.
    public var count: Int { rows.count }

    /// The value of `field` in row `row`, or `nil` when the field was not fetched.
    public func value(_ field: String, row: Int) -> Value? {
        fields.firstIndex { $0.name == field }.map { rows[row][$0] }
    }

    /// Row `row` as one JSON object; `json` fields are embedded as JSON.
    public func jsonObject(row: Int) -> String {
        var out = "{"
        for (i, field) in fields.enumerated() {
            if i > 0 { out.append(",") }
            JSONText.appendQuoted(field.name, to: &out)
            out.append(":")
            JSONText.append(rows[row][i], rawJSON: field.type == .json, to: &out)
        }
        out.append("}")
        return out
    }
}

/// Records sharing one value of the section field.
public struct RecordSection: Sendable, Hashable {
    /// The section field's value.
    public var key: Value
    /// The section's records.
    public var records: RecordSet
}
