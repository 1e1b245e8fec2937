import GRDB
import GRDBSQLite

/// Related records embedded in fetched ones (DESIGN §12, SwiftData's
/// `relationshipKeyPathsForPrefetching`): for one relationship, each
/// related record once, and which of them belong to each fetched row.
public struct EmbeddedRecords: Sendable, Hashable {
    /// The relationship's name, the key the records sit under.
    public var name: String
    /// Whether each row holds an array (to-many) or one record or null (to-one).
    public var isToMany: Bool
    /// The related records, with their own embedded records.
    public var records: RecordSet
    /// For each row of the embedding set, the rows of ``records`` that belong to it.
    public var members: [[Int]]
}

/// How one relationship of a fetch is prefetched: which columns of the
/// fetched rows name the related records, which columns of the related
/// table match them, and what of the related records is fetched, with the
/// relationships prefetched from them in turn.
package struct PrefetchPlan: Sendable {
    let name: String
    package let isToMany: Bool
    package let target: EntitySchema
    /// Positions in the parent's selected row of the values to match: a
    /// to-one's columns, or for a to-many the parent's identifier.
    let keys: [Int]
    /// The target's columns matched against them: its identifier, or for a
    /// to-many its inverse's columns.
    package let matches: [String]
    /// The fields the embedded records show.
    let fields: [Field]
    /// What is selected of the target: `fields`, then the columns the
    /// nested plans need.
    package let selected: [Field]
    package let children: [PrefetchPlan]

    /// The relationship paths a fetch embeds, each with the fields named under it.
    final class Tree {
        var children: [(String, Tree)] = []
        var fields: [String]? = nil
        var isEmpty: Bool { children.isEmpty }
        func child(_ name: String) -> Tree {
            if let n = children.first(where: { $0.0 == name }) { return n.1 }
            let n = Tree()
            children.append((name, n))
            return n
        }
    }

    /// Reads what a fetch of `entity` embeds: the relationships named in
    /// `prefetch` (dotted for nesting: `lines.product`) or at the head of a
    /// key path in `fields` (`customer.name`), which then shows only the
    /// fields named so. Returns them, and the plain fields named in
    /// `fields` (`nil`: every field).
    ///
    /// - Throws: ``DepotError/Code/unknownField`` for a name that is no
    ///   relationship (or field), with a suggestion;
    ///   ``DepotError/Code/invalidArgument`` for a field named in `prefetch`,
    ///   or a relationship named in `fields`.
    static func parse(
        entity: EntitySchema, schema: StoreSchema, prefetch: [String],
        fields names: [String]?
    ) throws -> (tree: Tree, fields: [Field]?) {
        let root = Tree()
        func walk(_ path: String, endsWithField: Bool) throws {
            var node = root, current = entity
            let parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            var i = 0
            while i < parts.count {
                let rest = parts[i...].joined(separator: ".")
                if endsWithField, i > 0, current.position(of: rest) != nil {
                    if node.fields == nil { node.fields = [] }
                    if !node.fields!.contains(rest) { node.fields!.append(rest) }
                    return
                }
                guard let r = current.relationships.first(where: { $0.name == parts[i] }),
                    let target = try? schema.entity(r.target)
                else {
                    if !endsWithField, current.position(of: rest) != nil {
                        throw DepotError(
                            .invalidArgument,
                            "prefetch names relationships, and \(JSONText.quoted(path)) "
                                + "is a field; name it in fields")
                    }
                    let known = current.relationships.map(\.name) + (endsWithField ? current.fields.map(\.name) : [])
                    throw DepotError(
                        .unknownField,
                        "entity \(JSONText.quoted(current.name)) has no "
                            + (endsWithField ? "field or relationship " : "relationship ") + JSONText.quoted(parts[i])
                            + (path.contains(".") ? " (in \(JSONText.quoted(path)))" : "")
                            + DepotError.suggestion(for: parts[i], in: known))
                }
                node = node.child(r.name)
                current = target
                i += 1
            }
            if endsWithField {
                throw DepotError(
                    .invalidArgument,
                    "fields names \(JSONText.quoted(path)), a relationship: name its "
                        + "fields (\(path).\(current.fields[0].name)), or prefetch it")
            }
        }
        var plain: [Field]? = nil
        if let names {
            var out: [Field] = []
            for name in names {
                if let p = entity.position(of: name) { out.append(entity.fields[p]); continue }
                try walk(name, endsWithField: true)
            }
            plain = out
        }
        for path in prefetch { try walk(path, endsWithField: false) }
        return (root, plain)
    }

    /// The plans of `tree` for rows of `entity` that show `shown`, and the
    /// columns they need beyond those, which the rows select after them.
    static func build(
        _ tree: Tree, entity: EntitySchema, schema: StoreSchema,
        shown: [Field]
    ) throws -> (plans: [PrefetchPlan], extra: [Field]) {
        var selected = shown
        func position(_ name: String) -> Int {
            if let p = selected.firstIndex(where: { $0.name == name }) { return p }
            selected.append(entity.fields[entity.position(of: name)!])
            return selected.count - 1
        }
        var plans: [PrefetchPlan] = []
        for (name, child) in tree.children {
            let r = entity.relationships.first { $0.name == name }!
            let target = try schema.entity(r.target)
            let keys: [Int], matches: [String]
            switch r.kind {
            case .toOne:
                keys = (entity.relationshipColumns[name] ?? []).map(position)
                matches = target.identifier
            case .toMany(let inverse, _):
                keys = entity.identifier.map(position)
                matches = target.relationshipColumns[inverse] ?? []
            }
            let fields = try child.fields.map { try $0.map { try target.field(named: $0) } } ?? target.fields
            let (children, extra) = try build(child, entity: target, schema: schema, shown: fields)
            plans.append(
                PrefetchPlan(
                    name: name, isToMany: !r.isToOne, target: target, keys: keys, matches: matches,
                    fields: fields, selected: fields + extra, children: children))
        }
        return (plans, Array(selected.dropFirst(shown.count)))
    }

    /// Embeds this relationship's records in `parent`, whose rows hold
    /// the parent level's selected columns: its rows' distinct keys looked
    /// up a thousand at a time, to-many members in the order of the
    /// target's identifier, then the nested plans on what it found. The
    /// parent's rows keep their extra columns; the caller trims them.
    func embed(into parent: inout RecordSet, _ session: any SQLSession, dialect: any SQLDialect) async throws {
        let matchFields = matches.map { name in target.fields[target.position(of: name)!] }
        let columns = matchFields + selected
        let select = columns.map { dialect.resultColumn(SQL.quote($0.name)) }.joined(separator: ", ")
        let order =
            isToMany
            ? " ORDER BY "
                + target.identifier.map { name in
                    dialect.ordered(SQL.quote(name), target.fields[target.position(of: name)!])
                }.joined(separator: ", ")
            : ""
        var found = RecordSet(fields: selected, rows: [])
        var byKey: [Key: [Int]] = [:]
        let keyList = distinctKeys(of: parent)
        var start = 0
        while start < keyList.count {
            let chunk = keyList[start..<min(start + 1_000, keyList.count)]
            start += chunk.count
            var keyed: SQLStatement
            if matchFields.count == 1 {
                keyed = "\(sql: SQL.quote(matches[0])) IN ("
                for (i, key) in chunk.enumerated() { keyed = keyed + (i > 0 ? ", " : "") + "\(bind: key[0])" }
            } else {
                // Row values: SQLite takes them from a subquery only.
                keyed = "(\(sql: matches.map(SQL.quote).joined(separator: ", "))) IN (VALUES "
                for (i, key) in chunk.enumerated() {
                    keyed = keyed + (i > 0 ? ", (" : "(")
                    for (k, value) in key.enumerated() { keyed = keyed + (k > 0 ? ", " : "") + "\(bind: value)" }
                    keyed = keyed + ")"
                }
            }
            let rows = try await session.rows(
                ("SELECT \(sql: select) FROM \(table: target) WHERE " + keyed + ")\(sql: order)").once)
            for row in rows {
                let typed = row.indices.map { row[$0].stored(as: columns[$0].type) }
                // A to-one's column has the type of the target's identifier,
                // a to-many's inverse that of the parent's: keys compare equal.
                let key =
                    matchFields.count == 1 ? Key.one(typed[0]) : Key.many(Array(typed.prefix(matchFields.count)))
                byKey[key, default: []].append(found.rows.count)
                found.rows.append(Array(typed.dropFirst(matchFields.count)))
            }
        }
        for child in children { try await child.embed(into: &found, session, dialect: dialect) }
        attach(found, byKey: byKey, to: &parent)
    }

    /// ``embed(into:_:dialect:)`` in an SQLite read's closure (a live
    /// fetch's snapshot shared with the other streams woken by a commit,
    /// ``SQLiteFeedSource``): one query for all of its rows
    /// (the keys bound as one JSON array), then the nested plans on what it
    /// found, one query each. The parent's rows keep their extra columns;
    /// the caller trims them.
    func embed(_ db: Database, into parent: inout RecordSet) throws {
        let keyList = distinctKeys(of: parent)
        var found = RecordSet(fields: selected, rows: [])
        var byKey: [Key: [Int]] = [:]
        if !keyList.isEmpty {
            var json = "["
            for (i, key) in keyList.enumerated() {
                if i > 0 { json.append(",") }
                if key.count == 1 {
                    JSONText.append(key[0], to: &json)
                } else {
                    json.append("[")
                    for (k, v) in key.enumerated() {
                        if k > 0 { json.append(",") }
                        JSONText.append(v, to: &json)
                    }
                    json.append("]")
                }
            }
            json.append("]")
            let matched = matches.map(SQL.quote)
            let keyed =
                matched.count == 1
                ? "\(matched[0]) IN (SELECT value FROM json_each(?1))"
                : "(" + matched.joined(separator: ", ") + ") IN (SELECT "
                    + matched.indices.map { "json_extract(value, '$[\($0)]')" }.joined(separator: ", ")
                    + " FROM json_each(?1))"
            // To-many arrays in the order of the target's identifier.
            let order = isToMany ? " ORDER BY " + target.identifier.map(SQL.quote).joined(separator: ", ") : ""
            let sql =
                "SELECT " + (matched + selected.map { SQL.quote($0.name) }).joined(separator: ", ")
                + " FROM \(target.table) WHERE \(keyed)\(order)"
            let statement = try db.cachedStatement(sql: sql)
            let s = statement.sqliteStatement
            sqlite3_reset(s)
            SQL.bind(.string(json), to: s, at: 1)
            defer { sqlite3_reset(s) }
            let matchFields = matches.map { name in target.fields[target.position(of: name)!] }
            while try SQL.step(s, db) {
                let key =
                    matchFields.count == 1
                    ? Key.one(SQL.column(s, 0, as: matchFields[0].type))
                    : Key.many(matchFields.indices.map { SQL.column(s, Int32($0), as: matchFields[$0].type) })
                // A to-one's column has the type of the target's identifier,
                // a to-many's inverse that of the parent's: keys compare equal.
                byKey[key, default: []].append(found.rows.count)
                found.rows.append(
                    selected.indices.map { SQL.column(s, Int32(matched.count + $0), as: selected[$0].type) })
            }
        }
        for child in children { try child.embed(db, into: &found) }
        attach(found, byKey: byKey, to: &parent)
    }

    /// The distinct keys of `parent`'s rows, in the order met; a
    /// one-column key (the usual case) is hashed as its value, not as an array.
    package func distinctKeys(of parent: RecordSet) -> [[Value]] {
        var seen: Set<Key> = []
        var keyList: [[Value]] = []
        for row in parent.rows {
            guard let key = Key(keys, of: row), seen.insert(key).inserted else { continue }
            keyList.append(keys.map { row[$0] })
        }
        return keyList
    }

    /// Embeds `found` (rows of ``selected``, their own embedded records in
    /// place; `byKey`: the rows matching each key) in `parent`.
    package func attach(_ found: RecordSet, byKey: [Key: [Int]], to parent: inout RecordSet) {
        var found = found
        found.fields = fields
        found.trim(to: fields.count)
        let members = parent.rows.map { row -> [Int] in Key(keys, of: row).flatMap { byKey[$0] } ?? [] }
        parent.embedded.append(EmbeddedRecords(name: name, isToMany: isToMany, records: found, members: members))
    }

    /// The values a row's key columns hold; `nil` when any is null (it names nothing).
    package enum Key: Hashable {
        case one(Value)
        case many([Value])

        /// The key of values matched in a related row.
        package init(_ values: [Value]) {
            self = values.count == 1 ? .one(values[0]) : .many(values)
        }

        init?(_ positions: [Int], of row: [Value]) {
            if positions.count == 1 {
                let v = row[positions[0]]
                if v.isNull { return nil }
                self = .one(v)
            } else {
                let values = positions.map { row[$0] }
                if values.contains(where: \.isNull) { return nil }
                self = .many(values)
            }
        }
    }
}
