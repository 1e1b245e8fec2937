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

    /// The records in runs of one value of `field` (sorted by it first), as sections.
    package func sections(by field: String) -> [RecordSection] {
        guard let column = fields.firstIndex(where: { $0.name == field }) else { return [] }
        var runs: [(key: Value, rows: [Int])] = []
        for (i, row) in rows.enumerated() {
            if runs.last?.key != row[column] { runs.append((row[column], [])) }
            runs[runs.count - 1].rows.append(i)
        }
        return runs.map { RecordSection(key: $0.key, records: subset($0.rows)) }
    }

    package init(fields: [Field], rows: [[Value]], embedded: [EmbeddedRecords] = []) {
        self.fields = fields
        self.rows = rows
        self.embedded = embedded
    }

    /// The last record's values of `fields` (a page's keys, for the next
    /// page's ``FetchDescriptor/after``); nil when there is no record or it
    /// lacks one of them.
    public func lastValues(of fields: [String]) -> [Value]? {
        guard count > 0 else { return nil }
        var values: [Value] = []
        for field in fields {
            guard let value = value(field, row: count - 1) else { return nil }
            values.append(value)
        }
        return values
    }

    /// The value of `field` in row `row`, or `nil` when the field was not fetched.
    public func value(_ field: String, row: Int) -> Value? {
        fields.firstIndex { $0.name == field }.map { rows[row][$0] }
    }

    /// Row `row` as one JSON object; `json` fields are embedded as JSON,
    /// and so are prefetched records: an object (or null) for a to-one, an
    /// array for a to-many.
    public func jsonObject(row: Int) -> String {
        var out = ""
        appendJSON(row: row, keys: JSONKeys(self), to: &out)
        return out
    }

    /// Every row, as one JSON array of ``jsonObject(row:)``s; the keys are
    /// quoted once for the whole set, not per record (a page of 1,000
    /// orders with their lines spent a third of its time quoting them).
    public func jsonArray() -> String {
        var out = "["
        out.reserveCapacity(rows.count * 16 * max(1, fields.count))
        let keys = JSONKeys(self)
        for row in rows.indices {
            if row > 0 { out.append(",") }
            appendJSON(row: row, keys: keys, to: &out)
        }
        out.append("]")
        return out
    }

    /// Every row as ``jsonObject(row:)``, comma-separated, after a comma
    /// when `afterOthers` (the elements of a JSON array written a set at a
    /// time: a streamed fetch).
    package func appendJSONElements(to out: inout String, afterOthers: Bool) {
        let keys = JSONKeys(self)
        for row in rows.indices {
            if row > 0 || afterOthers { out.append(",") }
            appendJSON(row: row, keys: keys, to: &out)
        }
    }

    /// Every row as a line of `format`: a JSON object and LF, or CSV cells
    /// and CRLF (``RowEncoder/csvField(_:)-(Value)``); a set without embedded records.
    package func appendLines(as format: RecordFormat, to out: inout String) {
        switch format {
        case .ndjson:
            let keys = JSONKeys(self)
            for row in rows.indices {
                appendJSON(row: row, keys: keys, to: &out)
                out.append("\n")
            }
        case .csv:
            for row in rows {
                out += row.map(RowEncoder.csvField).joined(separator: ",")
                out.append("\r\n")
            }
        }
    }

    /// The quoted keys of a set's objects (`"name":`), `nil` for a field
    /// whose embedded record stands in its place, and those of its embedded sets.
    private struct JSONKeys {
        var fields: [String?]
        var embedded: [String]
        var children: [JSONKeys]
        init(_ set: RecordSet) {
            fields = set.fields.map { f in
                if set.isEmbedded(f) { return nil }
                var key = ""
                JSONText.appendQuoted(f.name, to: &key)
                return key + ":"
            }
            embedded = set.embedded.map { e in
                var key = ""
                JSONText.appendQuoted(e.name, to: &key)
                return key + ":"
            }
            children = set.embedded.map { JSONKeys($0.records) }
        }
    }

    private func appendJSON(row: Int, keys: JSONKeys, to out: inout String) {
        out.append("{")
        var first = true
        let values = rows[row]
        for (i, field) in fields.enumerated() {
            guard let key = keys.fields[i] else { continue }
            if !first { out.append(",") }
            first = false
            out.append(key)
            JSONText.append(values[i], rawJSON: field.type == .json, to: &out)
        }
        for (k, e) in embedded.enumerated() {
            if !first { out.append(",") }
            first = false
            out.append(keys.embedded[k])
            let members = e.members[row]
            if e.isToMany {
                out.append("[")
                for (n, m) in members.enumerated() {
                    if n > 0 { out.append(",") }
                    e.records.appendJSON(row: m, keys: keys.children[k], to: &out)
                }
                out.append("]")
            } else if let m = members.first {
                e.records.appendJSON(row: m, keys: keys.children[k], to: &out)
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

    /// These rows, then `other`'s, with their embedded records (`other`
    /// holds the same fields and embeds the same relationships).
    package func appending(_ other: RecordSet) -> RecordSet {
        var out = RecordSet(fields: fields, rows: rows + other.rows)
        out.embedded = zip(embedded, other.embedded).map { a, b in
            var e = a
            let offset = a.records.rows.count
            e.records = a.records.appending(b.records)
            e.members = a.members + b.members.map { $0.map { $0 + offset } }
            return e
        }
        return out
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
    package mutating func trim(to count: Int) {
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
