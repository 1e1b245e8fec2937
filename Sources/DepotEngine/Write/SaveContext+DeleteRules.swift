import GRDB
import GRDBSQLite

/// A to-one of the store that points at an entity, with what deleting its
/// target does to the records holding it (DESIGN §12).
package struct IncomingReference: Sendable {
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
    /// Every to-one of the store that points at `entity`.
    func references(to entity: EntitySchema) -> [IncomingReference] {
        IncomingReference.all(to: entity, in: store.entities)
    }

    /// Applies the delete rules of `incoming` (``references(to:)``) to the
    /// records that refer to a record of `entity` just deleted (its
    /// `identifier` values), in the same save:
    /// `cascade` deletes them (and, through this again, theirs), `nullify`
    /// sets their reference to null, `deny` throws, which rolls the whole
    /// save back. Each effect is logged in the save's history transaction,
    /// with values where the entity keeps them.
    ///
    /// Called after the record's own delete, so that a cycle of cascades
    /// ends at records already gone.
    ///
    /// - Parameter counts: takes the records deleted by cascades and updated
    ///   by nullify, so that a job's counters agree with its history (DESIGN §3).
    /// - Throws: ``DepotError/Code/conflict`` for a `deny` rule with records
    ///   still referring.
    func applyDeleteRules(
        _ entity: EntitySchema, _ incoming: [(reference: IncomingReference, match: String)],
        identifier: [Value], identifierJSON: String, counts: inout WriteCounts
    ) throws {
        for (reference, match) in incoming {
            let source = reference.source
            switch reference.rule {
            case .deny:
                var count = 0
                try select("SELECT count(*) FROM \(source.table) WHERE \(match)", identifier, cached: true) {
                    count = Int(sqlite3_column_int64($0, 0))
                }
                if count > 0 { throw reference.denied(entity, identifierJSON: identifierJSON, count: count) }
            case .cascade:
                let cascaded = try deleteRows(
                    source,
                    select: SQLFragment(
                        sql: "SELECT rowid FROM \(source.table) WHERE \(match)",
                        arguments: identifier), limit: Int.max, cached: true)
                counts.add(cascaded.counts)
            case .nullify:
                counts.updated += try nullify(reference, match: match, identifier: identifier)
            }
        }
    }

    /// Sets `reference` to null in the records of its source that hold
    /// `identifier`, logging each as an update of its columns.
    ///
    /// - Returns: how many records it updated.
    private func nullify(_ reference: IncomingReference, match: String, identifier: [Value]) throws -> Int {
        let source = reference.source
        let positions = reference.columns.compactMap { source.position(of: $0) }
        let ids = source.identifierIndexes
        var found: [(Int64, [Value])] = []
        try select(
            "SELECT rowid, " + ids.map { SQL.quote(source.fields[$0].name) }.joined(separator: ", ")
                + " FROM \(source.table) WHERE \(match)", identifier, cached: true
        ) { statement in
            found.append(
                (
                    sqlite3_column_int64(statement, 0),
                    ids.indices.map { SQL.column(statement, Int32($0 + 1), as: source.fields[ids[$0]].type) }
                ))
        }
        guard !found.isEmpty else { return 0 }
        let update = try db.cachedStatement(
            sql: "UPDATE \(source.table) SET "
                + reference.columns.map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ") + " WHERE rowid = ?"
        ).sqliteStatement
        let fields = JSONText.array(reference.columns)
        let keepsValues = source.history == .values
        for (rowid, values) in found {
            sqlite3_bind_int64(update, 1, rowid)
            try SQL.step(update, db)
            sqlite3_reset(update)
            var id = ""
            Identifier.appendJSON(values, to: &id)
            try logChange(
                entity: source.name, identifier: id, kind: .update, fields: fields,
                old: keepsValues ? Self.object(source, Array(zip(positions, identifier))) : nil,
                new: keepsValues ? Self.object(source, positions.map { ($0, Value.null) }) : nil)
        }
        return found.count
    }

    /// Checks that the to-ones a batch update sets name stored records of
    /// their targets (null passes for an optional one), in the update's save.
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` naming the missing
    ///   record, or a compound reference set in part.
    func checkReferences(_ entity: EntitySchema, assignments: [(Int, Value)]) throws {
        for (r, set) in try Self.assignedReferences(entity, assignments: assignments) {
            if let missing = try missingReference(to: r.target, identifier: set) {
                throw Self.unstoredReference(r, missing: missing)
            }
        }
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

    /// Why a reference to the `target` record with these identifier values
    /// (in its identifier's order) does not hold, "no Customer with
    /// identifier "C9"", or nil when the record is stored. Imports check
    /// each row through it, so its statement is cached.
    func missingReference(to target: String, identifier: [Value]) throws -> String? {
        let find = try referenceStatement(to: target)
        for (k, value) in identifier.enumerated() { SQL.bind(value, to: find, at: Int32(k + 1)) }
        defer { sqlite3_reset(find) }
        guard try !SQL.step(find, db) else { return nil }
        return Self.missing(target, identifier)
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
