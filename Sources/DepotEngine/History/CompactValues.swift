import GRDB

/// Turns the compact values of a change (system tables version 3: a JSON
/// array without the fields' names) back into the JSON object the API and
/// ``HistoryChange`` show. Written by hand: it only cuts the array at its
/// top-level commas and pastes each element after its name, byte for byte,
/// so a value reads back exactly as it was written (a parser would
/// re-format numbers), and it runs for every change a history read returns.
package enum CompactValues {
    /// The object of `array`'s elements under `names`, in order; `text`
    /// itself when it is not an array (an object written before version 3,
    /// or by a batch update or delete) or when the counts differ.
    package static func object(_ text: String, names: [String]) -> String {
        guard text.utf8.first == UInt8(ascii: "[") else { return text }
        let elements = split(text)
        guard elements.count == names.count else { return text }
        var out = "{"
        for (i, element) in elements.enumerated() {
            if i > 0 { out += "," }
            JSONText.appendQuoted(names[i], to: &out)
            out += ":"
            out += element
        }
        return out + "}"
    }

    /// A change as `depot_changes` holds it, its values as objects:
    /// compact values (arrays) follow an update's `fields`, an insert's or
    /// a delete's `layout` (names remembered in `layouts`).
    static func change(
        _ db: Database, entity: String, identifier: String, kind: String, fields fieldsText: String?,
        tombstone: String?, old: String?, new: String?, layout: Int64?, layouts: inout [Int64: [String]]
    ) throws -> HistoryChange {
        var fields: [String]? = nil
        if let fieldsText, case .array(let names)? = MiniJSON.parse(fieldsText) {
            fields = names.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        let kind = ChangeKind(rawValue: kind) ?? .update
        var old = old
        var new = new
        if old?.utf8.first == UInt8(ascii: "[") || new?.utf8.first == UInt8(ascii: "[") {
            let names =
                try kind == .update
                ? fields ?? []
                : layout.map { try CompactValues.names(db, layout: $0, cache: &layouts) } ?? []
            old = old.map { CompactValues.object($0, names: names) }
            new = new.map { CompactValues.object($0, names: names) }
        }
        return HistoryChange(
            entity: entity, identifier: identifier, kind: kind, fields: fields, tombstone: tombstone, old: old, new: new
        )
    }

    /// The top-level elements of a JSON array, as text.
    static func split(_ text: String) -> [Substring] {
        var elements: [Substring] = []
        let utf8 = text.utf8
        var depth = 0
        var inString = false
        var escaped = false
        var start: String.Index? = nil
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    if depth == 1 { start = utf8.index(after: index); index = utf8.index(after: index); continue }
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    depth -= 1
                    if depth == 0, let s = start {
                        let element = text[s..<index]
                        if !element.isEmpty || !elements.isEmpty { elements.append(element) }
                        return elements
                    }
                case UInt8(ascii: ","):
                    if depth == 1, let s = start {
                        elements.append(text[s..<index])
                        start = utf8.index(after: index)
                    }
                default: break
                }
            }
            index = utf8.index(after: index)
        }
        return elements
    }

    /// The field names of layout `id`, from `depot_layouts`, remembered in `cache`.
    static func names(_ db: Database, layout id: Int64, cache: inout [Int64: [String]]) throws -> [String] {
        if let names = cache[id] { return names }
        var names: [String] = []
        if let text = try String.fetchOne(
            db.cachedStatement(sql: "SELECT fields FROM depot_layouts WHERE id = ?"),
            arguments: [id]),
            case .array(let items)? = MiniJSON.parse(text)
        {
            names = items.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        cache[id] = names
        return names
    }
}
