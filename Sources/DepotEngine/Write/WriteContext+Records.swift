import DepotWire

/// The record operations of a save, written once over the primitives of
/// ``WriteContext``: a batch delete with the delete rules of DESIGN §12, a
/// batch update. Each backend gives only how it finds, removes and sets
/// records; what is judged, counted and logged is here.
extension WriteContext {
    /// Deletes the first `limit` records of `selection`, each logged with
    /// its tombstone (and old values where the entity keeps them), and the
    /// delete rules of what refers to each, right after it.
    ///
    /// - Returns: how many records the selection gave, and the counts of
    ///   everything deleted (cascades included) and updated (nullified), so
    ///   that a job's counters agree with its history (DESIGN §3).
    /// - Throws: ``DepotError/Code/conflict`` for a `deny` rule with
    ///   records still referring (the whole save rolls back).
    /// The keys of the first `limit` records of `selection`, in the
    /// backend's order; of groups of duplicates, every member but the one
    /// a resolution keeps (the first or the last in that order).
    func keys(_ selection: RowSelection, limit: Int) async throws -> [RecordKey] {
        let entity = selection.entity
        let statement: SQLStatement
        switch selection.kind {
        case .matching(let filter):
            let select: SQLStatement =
                "SELECT \(recordKey: entity) FROM \(table: entity) WHERE \(fragment: filter) ORDER BY \(recordKeyOrder: entity) LIMIT \(bind: limit)"
            statement = filter.recurs ? select : select.once
        case .redundant(let query, let keep):
            // Each record numbered in its group in the backend's order.
            let groups = query.groups.joined(separator: ", ")
            let select: SQLStatement =
                "SELECT \(recordKey: entity) FROM (SELECT \(recordKeyColumns: entity), row_number() OVER (PARTITION BY \(sql: groups) ORDER BY \(recordKeyOrder: entity)) AS depot_n, count(*) OVER (PARTITION BY \(sql: groups)) AS depot_members FROM \(table: entity) WHERE \(fragment: query.filter)) AS g WHERE \(sql: keep == .keepFirst ? "depot_n > 1" : "depot_n < depot_members") ORDER BY \(recordKeyOrder: entity) LIMIT \(bind: limit)"
            statement = select.once
        }
        return try await rows(statement).map { RecordKey(row: $0[...], of: entity) }
    }

    public func deleteRows(_ selection: RowSelection, limit: Int) async throws -> (rows: Int, counts: WriteCounts) {
        let found = try await keys(selection, limit: limit)
        var counts = WriteCounts()
        for key in found {
            try await delete(key, of: selection.entity, in: selection.schema, counts: &counts)
        }
        return (found.count, counts)
    }

    /// Deletes one record (nothing when it is already gone, as at the end
    /// of a cycle of cascades), logs it, and applies the delete rules of
    /// what refers to it: `cascade` deletes those records (and, through
    /// this again, theirs), `nullify` sets their reference to null, `deny`
    /// throws. Each effect is logged in the save's history transaction.
    private func delete(_ key: RecordKey, of entity: EntitySchema, in schema: StoreSchema, counts: inout WriteCounts)
        async throws
    {
        let tombstoneFields =
            entity.identifierIndexes
            + entity.preserveIndexes.filter { !entity.identifierIndexes.contains($0) }
        let keepsValues = entity.history == .values
        let returning = keepsValues ? Array(entity.fields.indices) : tombstoneFields
        guard let row = try await remove(key, of: entity, returning: returning) else { return }
        var values: [Int: Value] = [:]
        for (i, f) in returning.enumerated() { values[f] = row[i] }
        counts.deleted += 1
        let identifier = entity.identifierIndexes.map { values[$0]! }
        var identifierJSON = ""
        Identifier.appendJSON(identifier, to: &identifierJSON)
        try await log(
            HistoryChange(
                entity: entity.name, identifier: identifierJSON, kind: .delete,
                tombstone: SaveContext.object(entity, tombstoneFields.map { ($0, values[$0]!) }),
                old: keepsValues ? SaveContext.object(entity, returning.map { ($0, values[$0]!) }) : nil))
        for reference in IncomingReference.all(to: entity, in: schema.entities) {
            switch reference.rule {
            case .deny:
                let count = try await countReferring(reference, to: identifier)
                if count > 0 { throw reference.denied(entity, identifierJSON: identifierJSON, count: count) }
            case .cascade:
                for child in try await referring(reference, to: identifier) {
                    try await delete(child, of: reference.source, in: schema, counts: &counts)
                }
            case .nullify:
                let source = reference.source
                let positions = reference.columns.compactMap { source.position(of: $0) }
                let keeps = source.history == .values
                for nullified in try await nullify(reference, referringTo: identifier) {
                    var id = ""
                    Identifier.appendJSON(nullified, to: &id)
                    try await log(
                        HistoryChange(
                            entity: source.name, identifier: id, kind: .update,
                            fields: reference.columns,
                            old: keeps ? SaveContext.object(source, Array(zip(positions, identifier))) : nil,
                            new: keeps ? SaveContext.object(source, positions.map { ($0, Value.null) }) : nil))
                    counts.updated += 1
                }
            }
        }
    }

    /// A backend without a bulk path writes every chunk record by record.
    public func bulkUpdate(
        _ selection: RowSelection, assignments: [(Int, Value)], computed: [Int], after cursor: RowCursor, limit: Int
    ) async throws -> (counts: WriteCounts, cursor: RowCursor, more: Bool)? { nil }

    /// A backend without a bulk path sets a save's records one by one.
    public func bulkSet(_ entity: EntitySchema, fields: [Int], rows: [[Value]]) async throws -> [Bool]? { nil }

    /// A backend without a bulk path takes every change back one by one.
    public func bulkRevert(transaction: Int64, skip: Int, after: Int64?, limit: Int, newest: Int64) async throws
        -> (counts: WriteCounts, taken: Int, continues: Bool, last: Int64)?
    { nil }

    /// Sets `assignments` (entity positions and converted values) on the
    /// records of `selection` after `cursor`, at most `limit` of them, in
    /// the backend's order, with the values the selection computes for each
    /// on the fields at `computed`; records that hold the values already
    /// are unchanged and not logged. A record whose computed value its
    /// field cannot hold is left as it is and rejected.
    ///
    /// - Returns: the counts, the cursor after the last record visited,
    ///   whether more may follow, and a rejects file's line for each record rejected.
    /// - Throws: ``DepotError/Code/invalidArgument`` when a to-one is set to
    ///   a record that is not stored, or a compound one in part.
    public func updateRows(
        _ selection: RowSelection, assignments: [(Int, Value)], computed: [Int] = [], after cursor: RowCursor,
        limit: Int, checkReferences: Bool = true
    ) async throws -> (counts: WriteCounts, cursor: RowCursor, more: Bool, rejects: [String]) {
        let entity = selection.entity
        for (r, set) in try SaveContext.assignedReferences(entity, assignments: assignments) where checkReferences {
            let target = try selection.schema.entity(r.target)
            if try await !exists(target, identifier: set) {
                throw SaveContext.unstoredReference(r, missing: SaveContext.missing(target.name, set))
            }
        }
        let positions = assignments.map(\.0) + computed
        let (found, next) = try await records(selection, positions: positions, after: cursor, limit: limit)
        var counts = WriteCounts()
        var rejects: [String] = []
        var values = assignments
        next: for (row, record) in found.enumerated() {
            for k in computed.indices {
                let field = entity.fields[computed[k]]
                switch UpdatePlan.convert(
                    record.values[positions.count + k], computedAs: selection.computed[k].type, to: field)
                {
                case .success(let v):
                    values.append((computed[k], v))
                case .failure(let error):
                    var id = ""
                    Identifier.appendJSON(record.identifier, to: &id)
                    var line = "{\"identifier\":\(id),\"field\":"
                    JSONText.appendQuoted(field.name, to: &line)
                    line += ",\"reason\":"
                    JSONText.appendQuoted(error.message, to: &line)
                    line += ",\"value\":"
                    JSONText.append(record.values[positions.count + k], rawJSON: false, to: &line)
                    rejects.append(line + "}")
                    counts.reject(Rejection(row: row, field: field.name, reason: error.message))
                    values.removeSubrange(assignments.count...)
                    continue next
                }
            }
            defer { values.removeSubrange(assignments.count...) }
            let changed = values.indices.filter { !Value.storedEqual(record.values[$0], values[$0].1) }
            if changed.isEmpty {
                counts.unchanged += 1
                continue
            }
            try await set(changed.map { values[$0] }, on: record.key, of: entity)
            try await logUpdate(
                entity, identifier: record.identifier, changed: changed.map { values[$0] },
                old: changed.map { (values[$0].0, record.values[$0]) })
            counts.updated += 1
        }
        return (counts, next, found.count == limit, rejects)
    }

    /// Sets `assignments` on the stored record of `key`, whose values (every
    /// field, in the entity's order) the save has read already, as
    /// ``updateRows(_:assignments:computed:after:limit:checkReferences:)``
    /// sets a record it reads: only the fields whose value differs are
    /// written and logged. A one-record update of a save reads its record
    /// once this way (issue 52: its check read it, then the update again).
    ///
    /// - Returns: whether the record changed.
    /// - Throws: as `updateRows`, for a to-one set to a record not stored.
    package func update(
        _ key: RecordKey, identifier: [Value], of entity: EntitySchema, stored: [Value],
        assignments: [(Int, Value)], in schema: StoreSchema
    ) async throws -> Bool {
        for (r, set) in try SaveContext.assignedReferences(entity, assignments: assignments) {
            let target = try schema.entity(r.target)
            if try await !exists(target, identifier: set) {
                throw SaveContext.unstoredReference(r, missing: SaveContext.missing(target.name, set))
            }
        }
        let changed = assignments.filter { !Value.storedEqual(stored[$0.0], $0.1) }
        if changed.isEmpty { return false }
        try await set(changed, on: key, of: entity)
        try await logUpdate(
            entity, identifier: identifier, changed: changed, old: changed.map { ($0.0, stored[$0.0]) })
        return true
    }

    /// Logs an update of the fields `changed` (positions and new values)
    /// from `old`, with the values when the entity keeps them.
    private func logUpdate(
        _ entity: EntitySchema, identifier: [Value], changed: [(Int, Value)], old: [(Int, Value)]
    ) async throws {
        var id = ""
        Identifier.appendJSON(identifier, to: &id)
        let keepsValues = entity.history == .values
        try await log(
            HistoryChange(
                entity: entity.name, identifier: id, kind: .update, fields: changed.map { entity.fields[$0.0].name },
                old: keepsValues ? SaveContext.object(entity, old) : nil,
                new: keepsValues ? SaveContext.object(entity, changed) : nil))
    }
}

extension Value {
    /// Whether a stored value (read back as its field's type) equals a
    /// given one, as a store compares them before it writes: an integer
    /// equals the same double, text by its bytes (what is stored).
    package static func storedEqual(_ stored: Value, _ given: Value) -> Bool {
        switch (stored, given) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.double(let a), .int(let b)): a == Double(b)
        case (.int(let a), .double(let b)): Double(a) == b
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        default: false
        }
    }
}
