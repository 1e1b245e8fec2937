import GRDB
import GRDBSQLite

/// A to-one of the store that points at an entity, with what deleting its
/// target does to the records holding it (DESIGN §12).
public struct IncomingReference: Sendable {
    /// The entity holding the to-one.
    package var source: EntitySchema
    package var relationship: Relationship
    /// Its columns in `source`, in the target's identifier order.
    package var columns: [String]
    /// The declared to-many's rule; without one, nullify, or deny when the
    /// reference is required.
    package var rule: DeleteRule
    /// `col = ? AND …`: the records holding a given target identifier, found
    /// through the to-one's index. Made once; the statements using it are
    /// cached, so a large cascade compiles each once.
    var match: String { columns.map { "\(SQL.quote($0)) = ?" }.joined(separator: " AND ") }
}

extension IncomingReference {
    /// Every to-one of `entities` that points at `entity`.
    package static func all(to entity: EntitySchema, in entities: [EntitySchema]) -> [IncomingReference] {
        entities.flatMap { source in
            source.relationships.compactMap { r -> IncomingReference? in
                guard case .toOne(let required) = r.kind, r.target == entity.name,
                    let columns = source.relationshipColumns[r.name]
                else { return nil }
                let declared = entity.relationships.first {
                    if case .toMany(let inverse, _) = $0.kind {
                        $0.target == source.name && inverse == r.name
                    } else {
                        false
                    }
                }
                var rule: DeleteRule = required ? .deny : .nullify
                if let declared, case .toMany(_, let delete) = declared.kind { rule = delete }
                return IncomingReference(source: source, relationship: r, columns: columns, rule: rule)
            }
        }
    }

    /// Why `target`'s record cannot go: `count` records still refer to it
    /// under a deny rule (``DepotError/Code/conflict``).
    package func denied(_ target: EntitySchema, identifierJSON: String, count: Int) -> DepotError {
        DepotError(
            .conflict,
            "cannot delete \(target.name) \(identifierJSON): \(count) "
                + "\(source.name) record\(count == 1 ? "" : "s") refer\(count == 1 ? "s" : "") to it through "
                + "\(JSONText.quoted(source.name + "." + relationship.name)), whose delete rule is deny; "
                + "delete or change \(count == 1 ? "it" : "them") first")
    }
}

extension SaveContext {
    /// The rowids of the records that refer to the record of `identifier` through `reference`.
    func referring(_ reference: IncomingReference, to identifier: [Value]) throws -> [Int64] {
        var rowids: [Int64] = []
        try select("SELECT rowid FROM \(reference.source.table) WHERE \(reference.match)", identifier, cached: true) {
            rowids.append(sqlite3_column_int64($0, 0))
        }
        return rowids
    }

    /// How many records refer to the record of `identifier` through `reference`.
    func countReferring(_ reference: IncomingReference, to identifier: [Value]) throws -> Int {
        var count = 0
        try select(
            "SELECT count(*) FROM \(reference.source.table) WHERE \(reference.match)", identifier, cached: true
        ) {
            count = Int(sqlite3_column_int64($0, 0))
        }
        return count
    }

    /// Sets `reference` to null in the records of its source that hold
    /// `identifier`, giving their identifiers in rowid order.
    func nullify(_ reference: IncomingReference, referringTo identifier: [Value]) throws -> [[Value]] {
        let source = reference.source
        let ids = source.identifierIndexes
        var found: [(Int64, [Value])] = []
        try select(
            "SELECT rowid, " + ids.map { SQL.quote(source.fields[$0].name) }.joined(separator: ", ")
                + " FROM \(source.table) WHERE \(reference.match)", identifier, cached: true
        ) { statement in
            found.append(
                (
                    sqlite3_column_int64(statement, 0),
                    ids.indices.map { SQL.column(statement, Int32($0 + 1), as: source.fields[ids[$0]].type) }
                ))
        }
        let update =
            "UPDATE \(source.table) SET "
            + reference.columns.map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ")
            + ", depot_token = ? WHERE rowid = ?"
        for (rowid, _) in found { try run(update, [.int(try nextToken()), .int(rowid)]) }
        return found.map(\.1)
    }

    /// The to-ones a batch update sets to a record (not to null), with the
    /// identifier values it gives each.
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` for a compound reference set in part.
    package static func assignedReferences(_ entity: EntitySchema, assignments: [(Int, Value)]) throws
        -> [(Relationship, [Value])]
    {
        var out: [(Relationship, [Value])] = []
        for r in entity.relationships where r.isToOne {
            guard let columns = entity.relationshipColumns[r.name] else { continue }
            let set = columns.compactMap { name in assignments.first { entity.fields[$0.0].name == name }?.1 }
            if set.isEmpty { continue }
            guard set.count == columns.count else {
                throw DepotError(
                    .invalidArgument,
                    "set every column of relationship \(JSONText.quoted(r.name)) together: "
                        + columns.map(JSONText.quoted).joined(separator: ", "))
            }
            if set.contains(where: \.isNull) { continue }
            out.append((r, set))
        }
        return out
    }

    /// A batch update setting `r` to a record that is not stored (`missing`
    /// says which, as ``missing(_:_:)`` does).
    package static func unstoredReference(_ r: Relationship, missing: String) -> DepotError {
        DepotError(
            .invalidArgument, "\(missing): set \(JSONText.quoted(r.name)) to the identifier of a stored \(r.target)")
    }

    /// Whether `entity` has a record of `identifier` (its values in identifier order).
    func exists(_ entity: EntitySchema, identifier: [Value]) throws -> Bool {
        let find = try referenceStatement(to: entity.name)
        for (k, value) in identifier.enumerated() { SQL.bind(value, to: find, at: Int32(k + 1)) }
        defer { sqlite3_reset(find) }
        return try SQL.step(find, db)
    }

    /// The cached statement that finds a `target` record by its identifier
    /// (bound in its order); a writer takes it once per batch.
    func referenceStatement(to target: String) throws -> OpaquePointer {
        let entity = try store.entity(target)
        return try db.cachedStatement(
            sql: "SELECT 1 FROM \(entity.table) WHERE "
                + entity.identifier.map { "\(SQL.quote($0)) = ?" }.joined(separator: " AND ")
        ).sqliteStatement
    }

    /// "no Customer with identifier "C9"".
    package static func missing(_ target: String, _ identifier: [Value]) -> String {
        var text = ""
        Identifier.appendJSON(identifier, to: &text)
        return "no \(target) with identifier \(text)"
    }

    /// Runs `sql` with `arguments` bound, calling `row` for each result row;
    /// `cached` for SQL that recurs (the delete rules'), not for one-off
    /// predicates, which would fill the cache.
    func select(_ sql: String, _ arguments: [Value], cached: Bool = false, row: (OpaquePointer) throws -> Void) throws {
        let prepared = cached ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        let statement = prepared.sqliteStatement
        for (i, v) in arguments.enumerated() { SQL.bind(v, to: statement, at: Int32(i + 1)) }
        defer { sqlite3_reset(statement) }
        while try SQL.step(statement, db) { try row(statement) }
    }
}
