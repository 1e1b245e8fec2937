import GRDBSQLite

/// Changes logged by a save and not yet inserted into `depot_changes`: the
/// rows of one multi-row INSERT (``SaveContext/flushChanges()``).
///
/// Their text is kept in one byte buffer reused from statement to statement,
/// not a `String` or an array per value, so that buffering a change costs a
/// copy of its bytes and no allocation once the buffer has grown.
struct PendingChanges {
    /// A value's bytes in ``text``, or none for SQL null.
    private struct Span {
        var start: Int32
        var count: Int32
        static let null = Span(start: -1, count: 0)
    }

    private struct Row {
        var txn: Int64
        var entity: Span
        var identifier: Span
        var kind: ChangeKind
        var fields: Span
        var tombstone: Span
        var old: Span
        var new: Span
        var layout: Int64?
    }

    private var rows: [Row] = []
    private var text: [UInt8] = []

    var count: Int { rows.count }

    mutating func append(
        txn: Int64, entity: String, identifier: String, kind: ChangeKind, fields: String?,
        tombstone: String?, old: [UInt8]?, new: [UInt8]?, layout: Int64?
    ) {
        let entity = span(entity), identifier = span(identifier)
        let fields = fields.map { span($0) } ?? .null, tombstone = tombstone.map { span($0) } ?? .null
        let old = old.map { span($0) } ?? .null, new = new.map { span($0) } ?? .null
        rows.append(
            Row(
                txn: txn, entity: entity, identifier: identifier, kind: kind, fields: fields,
                tombstone: tombstone, old: old, new: new, layout: layout))
    }

    mutating func removeAll() {
        rows.removeAll(keepingCapacity: true)
        text.removeAll(keepingCapacity: true)
    }

    /// Binds the rows in `range`, nine parameters each, from parameter 1 on.
    /// SQLite copies the text (transient), so the buffer may change after.
    func bind(_ range: Range<Int>, to statement: OpaquePointer) {
        text.withUnsafeBufferPointer { buffer in
            var index: Int32 = 1
            func bind(_ span: Span) {
                if span.start < 0 {
                    sqlite3_bind_null(statement, index)
                } else {
                    let base = UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                        .advanced(by: Int(span.start)).assumingMemoryBound(to: CChar.self)
                    sqlite3_bind_text(statement, index, base, span.count, SQL.transient)
                }
                index += 1
            }
            for row in rows[range] {
                sqlite3_bind_int64(statement, index, row.txn)
                index += 1
                bind(row.entity)
                bind(row.identifier)
                var kind = row.kind.rawValue
                kind.withUTF8 { k in
                    k.withMemoryRebound(to: CChar.self) {
                        _ = sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), SQL.transient)
                    }
                }
                index += 1
                bind(row.fields)
                bind(row.tombstone)
                bind(row.old)
                bind(row.new)
                if let layout = row.layout {
                    sqlite3_bind_int64(statement, index, layout)
                } else {
                    sqlite3_bind_null(statement, index)
                }
                index += 1
            }
        }
    }

    private mutating func span(_ string: String) -> Span {
        var string = string
        return string.withUTF8 { span($0) }
    }

    private mutating func span(_ bytes: [UInt8]) -> Span {
        bytes.withUnsafeBufferPointer { span($0) }
    }

    private mutating func span(_ bytes: UnsafeBufferPointer<UInt8>) -> Span {
        let start = text.count
        text.append(contentsOf: bytes)
        return Span(start: Int32(start), count: Int32(bytes.count))
    }
}
