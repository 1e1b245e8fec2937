import DepotEngine
import DepotWire
import Foundation
import NIOCore

/// The answers that carry records, history values or duplicate groups, in
/// the shapes of their wire types (``RecordsAnswer``, ``SectionsAnswer``,
/// ``WatchEvent``, ``ChangeEvent``, ``TransactionPage``, ``DuplicateGroup``),
/// written around JSON the engine already wrote.
///
/// Every other answer is a wire type encoded by `JSONEncoder`. These are
/// written here by hand because the engine writes records as it reads them
/// (a fetch of any size streams a megabyte at a time, and `JSONEncoder`
/// needs the whole value in memory), and a history's values are stored as
/// JSON text, which `JSONEncoder` could only send after parsing it back
/// into values. `OpenAPITests` decodes each of them into its wire type,
/// refusing a key the type does not have.
enum StreamedJSON {
    /// `{"records":` … `}`: the head and tail around a page of records.
    static let recordsHead = "{\"records\":"
    static let recordsTail = "}\n"

    /// `{"sections": [{"key", "records"}]}`.
    static func sections(_ sections: [(key: Value, records: RecordSet)]) -> String {
        var out = "{\"sections\":["
        for (i, s) in sections.enumerated() {
            if i > 0 { out += "," }
            out += "{\"key\":"
            JSONText.append(s.key, to: &out)
            out += ",\"records\":" + s.records.jsonArray() + "}"
        }
        return out + "]}"
    }

    /// A ``WatchEvent``: the result's JSON, after the token it reflects.
    static func watchEvent(token: HistoryToken?, result: String) -> String {
        "{\"token\":\(quoted(token)),\"result\":\(result)}"
    }

    /// The first ``ChangeEvent`` of a live fetch with changes: the result.
    static func resultEvent(token: HistoryToken?, records: RecordSet) -> String {
        "{\"type\":\"result\",\"token\":\(quoted(token)),\"records\":" + records.jsonArray() + "}\n"
    }

    /// A ``ChangeEvent`` of type `changes`.
    static func changesEvent(_ c: ResultChanges) -> String {
        "{\"type\":\"changes\",\"token\":\(quoted(c.token)),"
            + "\"inserted\":\(c.inserted.jsonArray()),\"updated\":\(c.updated.jsonArray()),"
            + "\"deleted\":[" + c.deleted.map(\.json).joined(separator: ",") + "]}"
    }

    /// A ``TransactionPage``.
    static func transactionPage(_ page: [DepotEngine.HistoryTransaction]) -> String {
        "{\"transactions\":[" + page.map(transaction).joined(separator: ",") + "]}"
    }

    /// A ``DepotWire/HistoryTransaction``: its values are the stored JSON text.
    static func transaction(_ t: DepotEngine.HistoryTransaction) -> String {
        let changes = t.changes.map { c -> String in
            var s =
                "{\"entity\":\(JSONText.quoted(c.entity)),\"identifier\":\(c.identifier),\"kind\":\"\(c.kind.rawValue)\""
            if let fields = c.fields { s += ",\"fields\":[" + fields.map(JSONText.quoted).joined(separator: ",") + "]" }
            if let tomb = c.tombstone { s += ",\"tombstone\":\(tomb)" }
            if let old = c.old { s += ",\"old\":\(old)" }
            if let new = c.new { s += ",\"new\":\(new)" }
            return s + "}"
        }
        return "{\"token\":\(JSONText.quoted(t.token.description)),\"timestamp\":\(JSONText.quoted(t.timestamp)),"
            + "\"author\":\(JSONText.quoted(t.author)),\"job\":\(t.job.map(JSONText.quoted) ?? "null"),"
            + "\"changes\":[\(changes.joined(separator: ","))]" + (t.continues ? ",\"continues\":true}" : "}")
    }

    /// `{"groups":[`, the groups, `]}`: the head, one group, and the tail of a ``DuplicatesAnswer``.
    static let groupsHead = "{\"groups\":["
    static let groupsTail = "]}\n"

    static func group(_ g: DepotEngine.DuplicateGroup) -> String {
        var text = "{\"values\":["
        for (i, v) in g.values.enumerated() {
            if i > 0 { text += "," }
            JSONText.append(v, to: &text)
        }
        text += "],\"identifiers\":["
        for (i, id) in g.identifiers.enumerated() {
            if i > 0 { text += "," }
            text += id.json
        }
        return text + "]}"
    }

    private static func quoted(_ token: HistoryToken?) -> String {
        token.map { JSONText.quoted($0.description) } ?? "null"
    }
}
