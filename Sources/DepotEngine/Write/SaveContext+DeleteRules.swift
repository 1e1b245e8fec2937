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
