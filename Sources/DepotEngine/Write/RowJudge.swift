import DepotWire

/// What a row of a batch does to the store, judged the same way on every
/// backend: written once here, while each backend finds the stored record
/// its own way (an SQLite store probes the identifier's index a row at a
/// time; a PostgreSQL store reads a batch's stored records in one join).
///
/// The counters and reasons follow from the verdicts, so that both
/// backends count and refuse alike (DESIGN §3: counters agree with the
/// history).
package enum RowVerdict: Sendable, Equatable {
    /// A new record: written and logged as an insert.
    case insert
    /// A stored record whose fields (entity positions, in the judge's
    /// `changed`) differ: updated and logged.
    case update
    /// A stored record that holds every value already: neither written nor logged.
    case unchanged
    /// A stored record left alone under ``ConflictPolicy/skip``.
    case skipped
    /// A row refused, naming the field and why; the rest of the batch goes on.
    case rejected(field: String, reason: String)
}

extension BatchPlan {
    /// The row's refusal for a null identifier or required field it gives,
    /// or an identifier text out of ``Identifier/problem(_:)``'s rule,
    /// `value(c)` being its value in batch column `c`; nil when it has none.
    @inline(__always)
    package func nullRefusal(_ value: (Int) -> Value) -> RowVerdict? {
        for c in columns.indices where value(c).isNull && !columnFields[c].isOptional {
            let what = identifierColumns.contains(c) ? "identifier field" : "required field"
            return .rejected(field: columns[c], reason: "\(what) \(JSONText.quoted(columns[c])) is null")
        }
        for c in identifierColumns {
            if let problem = Identifier.problem(value(c)) {
                return .rejected(
                    field: columns[c], reason: "identifier field \(JSONText.quoted(columns[c])): \(problem)")
            }
        }
        return nil
    }

    /// The verdict on a row whose identifier no stored record has.
    @inline(__always)
    package func judgeNew() -> RowVerdict {
        if let field = missingRequired.first {
            return .rejected(field: field, reason: "new record lacks required field \(JSONText.quoted(field))")
        }
        return .insert
    }

    /// The verdict on a row whose identifier a stored record has.
    ///
    /// - Parameters:
    ///   - value: the row's value in batch column `c`.
    ///   - equalsStored: whether the stored record's field at entity
    ///     position `f` holds `value` (compared as an SQLite store does:
    ///     an integer equals the same double).
    ///   - changed: set to the entity positions of the fields an update changes.
    ///   - identifier: the row's identifier as the history writes it, for errors.
    ///   - twice: whether the stored record came from the same source
    ///     earlier (an import meeting a record of its file again).
    /// - Throws: ``DepotError/Code/conflict`` under ``ConflictPolicy/fail``
    ///   (the whole save rolls back).
    @inline(__always)
    package func judgeStored(
        _ value: (Int) -> Value, equalsStored: (Int, Value) -> Bool, changed: inout [Int],
        identifier: @autoclosure () -> String, twice: Bool = false
    ) throws -> RowVerdict {
        changed.removeAll(keepingCapacity: true)
        switch policy {
        case .skip:
            return .skipped
        case .fail:
            let what =
                twice
                ? "appears twice in the input and the conflict policy is fail"
                : "already exists and the conflict policy is fail"
            throw DepotError(
                .conflict,
                "record \(identifier()) of \(JSONText.quoted(entity.name)) \(what); nothing of this save was kept")
        case .upsert:
            for c in valueColumns {
                let f = columnPositions[c]
                if !equalsStored(f, value(c)) { changed.append(f) }
            }
        case .replace:
            if let field = missingRequired.first {
                return .rejected(
                    field: field, reason: "a replacing record lacks required field \(JSONText.quoted(field))")
            }
            for f in updatedFields where !equalsStored(f, fieldToColumn[f].map(value) ?? .null) { changed.append(f) }
        }
        return changed.isEmpty ? .unchanged : .update
    }

    /// For each row of `batch` (rows refused for a null not counted: they
    /// must not hide an earlier good record), whether a later row has the
    /// same identifier: under ``BatchOptions/supersedes`` only the last of
    /// an identifier's rows is written, the others counted as duplicates.
    package func supersededRows(_ batch: RecordBatch, refused: (Int) -> Bool) -> [Bool] {
        let width = columns.count
        var superseded = [Bool](repeating: false, count: batch.count)
        batch.values.withUnsafeBufferPointer { all in
            if identifierColumns.count == 1 {
                let c = identifierColumns[0]
                var seen = Set<Value>(minimumCapacity: batch.count)
                for r in stride(from: batch.count - 1, through: 0, by: -1) where !refused(r) {
                    if !seen.insert(all[r * width + c]).inserted { superseded[r] = true }
                }
            } else {
                var seen = Set<[Value]>(minimumCapacity: batch.count)
                for r in stride(from: batch.count - 1, through: 0, by: -1) where !refused(r) {
                    if !seen.insert(identifierColumns.map { all[r * width + $0] }).inserted { superseded[r] = true }
                }
            }
        }
        return superseded
    }
}

extension WriteCounts {
    /// Counts row `row`'s verdict.
    @inline(__always)
    package mutating func count(_ verdict: RowVerdict, row: Int) {
        switch verdict {
        case .insert: counters.inserted += 1
        case .update: counters.updated += 1
        case .unchanged: counters.unchanged += 1
        case .skipped: counters.skipped += 1
        case .rejected(let field, let reason): reject(Rejection(row: row, field: field, reason: reason))
        }
    }
}
