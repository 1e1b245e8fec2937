import DepotWire
import Foundation
import Synchronization

// A save (DESIGN §16), written once over the write context's primitives,
// for every backend: the changes are checked first, against the store as
// this transaction sees it, and every failing one is listed; only a set
// without failures is applied. Records come first (inserted, upserted,
// replaced, without reference checks: the check was made over the whole
// set, so records may name each other in any order), then updates, then
// deletes with their delete rules (so that a cascade cannot remove a
// record another change of the set updates); one history transaction logs
// them in that order.
extension StoreBackend {
    /// Applies `changeSet` in one transaction, logged as one history
    /// transaction by `author`.
    ///
    /// - Throws: ``SaveRefusal`` listing every failing change (nothing is
    ///   written); ``DepotError/Code/unknownEntity`` for an entity the
    ///   store does not have; ``DepotError/Code/invalidArgument`` for an
    ///   empty set or one larger than `limit`.
    public func save(_ changeSet: ChangeSet, author: String, limit: Int = 10_000) async throws -> SaveResult {
        let reply = try await saveAll([SaveRequest(changeSet, author: author, limit: limit)])[0].get()
        return reply.result!
    }

    /// Applies `changeSet` as ``save(_:author:limit:)`` does, exactly once
    /// for `idempotency`'s key: the first save keeps its answer (`answer`
    /// of its result) under the key in its own transaction; a save of the
    /// same key within its retention writes nothing and gives that answer
    /// again, `replayed`.
    ///
    /// - Throws: as ``save(_:author:limit:)``; and
    ///   ``DepotError/Code/idempotencyKeyReused`` when the key was used by a
    ///   save of another request (another digest).
    public func save(
        _ changeSet: ChangeSet, author: String, limit: Int = 10_000, idempotency: IdempotencyKey,
        answer: @escaping @Sendable (SaveResult) throws -> String
    ) async throws -> (answer: String, replayed: Bool) {
        let request = SaveRequest(changeSet, author: author, limit: limit, idempotency: idempotency, answer: answer)
        let reply = try await saveAll([request])[0].get()
        return (reply.answer!, reply.replayed)
    }

    /// Applies several saves in one transaction of the store, committed
    /// once (a group commit: one sync for all), each under a savepoint and
    /// in a history transaction of its own, with its own token, in order.
    /// A save that fails is undone alone and answered its error; an error
    /// of the store itself (I/O, a full disk, the store closed) fails them all.
    public func saveAll(_ requests: [SaveRequest]) async throws -> [Result<SaveReply, any Error>] {
        var results: [Result<SaveReply, any Error>?] = Array(repeating: nil, count: requests.count)
        var planned: [(Int, [PlannedChange])] = []
        for (i, request) in requests.enumerated() {
            do {
                planned.append(
                    (
                        i,
                        try plan(
                            request.changeSet, limit: request.limit,
                            empty: request.processorLease != nil || request.processorNext != nil)
                    ))
            } catch {
                results[i] = .failure(error)
            }
        }
        guard let first = planned.first else { return results.map { $0! } }
        let ready = planned
        // Waiting for the writer: a job's save ends early for it (WriteDemand).
        let demand = settings.demand
        let waiting = Waiting(demand)
        defer { waiting.served() }
        let applied = try await withSave(author: requests[first.0].author, job: nil) {
            save -> [(Int, Result<SaveReply, any Error>)] in
            waiting.served()
            var out: [(Int, Result<SaveReply, any Error>)] = []
            for (i, changes) in ready {
                let request = requests[i]
                try await save.beginHistoryTransaction(author: request.author)
                do {
                    let reply = try await save.withSavepoint {
                        try await Self.apply(changes, of: request, in: save, backend: self)
                    }
                    out.append((i, .success(reply)))
                } catch let refusal as SaveRefusal {
                    out.append((i, .failure(refusal)))
                } catch let error as DepotError where !Self.failsTheStore(error) {
                    out.append((i, .failure(error)))
                }  // any other error is the store's: the group fails with it
            }
            return out
        }
        for (i, result) in applied.value { results[i] = result }
        return results.map { $0! }
    }

    /// Whether an error is the store's (every save of a group fails with
    /// it), not one save's.
    private static func failsTheStore(_ error: DepotError) -> Bool {
        [.database, .io, .diskFull, .storeClosed].contains(error.code)
    }

    /// One save of a group, in its savepoint: replayed from its idempotency
    /// key, or checked and applied (and its answer kept under the key).
    private static func apply(_ planned: [PlannedChange], of request: SaveRequest, in save: Context, backend: Self)
        async throws -> SaveReply
    {
        if let key = request.idempotency,
            let kept = try await save.idempotentAnswer(key.key, since: Timestamp.ago(key.retention))
        {
            guard kept.digest == key.digest else {
                throw DepotError(
                    .idempotencyKeyReused,
                    "idempotency key \(JSONText.quoted(key.key)) was used by a save of another body; "
                        + "a retried save sends the same body, another save another key")
            }
            return SaveReply(result: nil, answer: kept.answer, replayed: true)
        }
        let now = request.now ?? Date()
        // A processor's lease and commit read their processor once, here
        // (issue 52: three reads a cycle, outside the save, before).
        if let name = request.processorNext {
            guard var info = try await save.processor(named: name, now: now) else {
                throw ProcessorRefusal.unknownProcessor(name, store: backend.settings.name)
            }
            let secret = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
            let next = try await save.leaseBatch(info, now: now, secret: secret)
            if case .batch = next { info.leased += 1 }
            return SaveReply(result: nil, answer: nil, replayed: false, processor: info, next: next)
        }
        var processor: ProcessorInfo?
        if let lease = request.processorLease {
            guard var info = try await save.processor(named: lease.processor, now: now) else {
                throw ProcessorRefusal.unknownProcessor(lease.processor, store: backend.settings.name)
            }
            // The batch was under a live lease (finishBatch checks it), so
            // counted in `leased`; it is now done.
            info.done += try await save.finishBatch(lease, now: now)
            info.batchesDone += 1
            info.leased = max(0, info.leased - 1)
            info.lastCommit = Timestamp.date(Timestamp.format(now))
            processor = info
        }
        let outcomes =
            planned.isEmpty ? [] : try await apply(planned, merge: request.changeSet.merge, in: save, backend: backend)
        let result = SaveResult(token: try await save.transaction().map(HistoryToken.init), changes: outcomes)
        var answer: String?
        if let key = request.idempotency, let encode = request.answer {
            let text = try encode(result)
            try await save.keepIdempotentAnswer(
                key.key, digest: key.digest, answer: text, forgetBefore: Timestamp.ago(key.retention))
            answer = text
        }
        return SaveReply(result: result, answer: answer, replayed: false, processor: processor)
    }

    /// The changes read against the schema.
    private func plan(_ changeSet: ChangeSet, limit: Int, empty: Bool = false) throws -> [PlannedChange] {
        guard !changeSet.changes.isEmpty || empty else {
            throw DepotError(.invalidArgument, "a save needs at least one change")
        }
        guard changeSet.changes.count <= limit else {
            throw DepotError(
                .invalidArgument,
                "a save holds at most \(limit) changes (max_save_changes), not \(changeSet.changes.count); "
                    + "larger work is an import")
        }
        let schema = settings.schema
        var filters: [String: String] = [:]
        return try changeSet.changes.enumerated().map { i, change in
            try PlannedChange(index: i, change, schema: schema, dialect: settings.dialect, filters: &filters)
        }
    }

    /// Checks the changes in `save`, then writes them: records, then
    /// updates, then deletes; their outcomes in the set's order.
    private static func apply(
        _ planned: [PlannedChange], merge: ChangeSet.MergePolicy, in save: Context, backend: Self
    ) async throws -> [ChangeOutcome] {
        if let outcomes = try await bulkUpdates(planned, in: save) { return outcomes }
        let planned = try await check(planned, merge: merge, in: save, schema: backend.settings.schema)
        var outcomes: [ChangeOutcome?] = Array(repeating: nil, count: planned.count)
        // By position: a PlannedChange is large, and copying each was a
        // measurable part of a processor's commit.
        let order =
            planned.indices.filter { planned[$0].writesRecord } + planned.indices.filter { planned[$0].kind == .update }
            + planned.indices.filter { planned[$0].kind == .delete }
        for k in order {
            do {
                outcomes[k] = try await planned[k].apply(in: save, backend: backend)
            } catch let error as DepotError {
                // The change's own failure; the store's (I/O, a full disk) passes as it is.
                guard let failure = planned[k].failure(error) else { throw error }
                throw SaveRefusal(failures: [failure])
            }
        }
        return outcomes.map { $0! }
    }

    /// The fewest updates a save writes in bulk.
    static var leastBulkUpdates: Int { 16 }

    /// A save of updates alone, of the same fields of records of one entity
    /// with no `if_token` (a processor's commit, a client's batch of
    /// edits), written by the backend in a few statements
    /// (``WriteContext/bulkSet(_:fields:rows:)``) with what writing them
    /// one by one writes; nil, with nothing written, for any other save or
    /// when the backend declines (a record not stored or changed twice, a
    /// reference set: the change-by-change path names the failure).
    private static func bulkUpdates(_ planned: [PlannedChange], in save: Context) async throws -> [ChangeOutcome]? {
        guard planned.count >= leastBulkUpdates, planned[0].kind == .update else { return nil }
        let entity = planned[0].entity
        // In the order of an update's assignments (Assignments.resolve): by name.
        let names = planned[0].values.keys.sorted()
        for i in planned.indices {
            guard planned[i].kind == .update, planned[i].invalid == nil, planned[i].ifToken == nil,
                planned[i].entity.name == entity.name, planned[i].values.count == names.count,
                names.allSatisfy({ planned[i].values[$0] != nil })
            else { return nil }
        }
        let positions = names.map { entity.position(of: $0)! }
        let rows = planned.indices.map { i in planned[i].identifier + names.map { planned[i].values[$0]! } }
        guard let changed = try await save.bulkSet(entity, fields: positions, rows: rows) else { return nil }
        return planned.indices.map { i in
            ChangeOutcome(
                index: planned[i].index, entity: entity.name, identifier: planned[i].identifier, kind: .update,
                effect: changed[i] ? .updated : .unchanged)
        }
    }

    /// Every failing change of the set, against the store as `save` sees
    /// it; the changes merged with the saves since their tokens.
    private static func check(
        _ planned: [PlannedChange], merge: ChangeSet.MergePolicy, in save: Context, schema: StoreSchema
    ) async throws -> [PlannedChange] {
        var planned = planned
        var failures = planned.compactMap(\.invalid)
        // One change per record.
        var seen: [PlannedChange.Key: Int] = [:]
        var repeated = Set<Int>()
        for i in planned.indices where !planned[i].identifier.isEmpty {
            let key = planned[i].key
            if let first = seen[key] {
                repeated.insert(planned[i].index)
                failures.append(
                    .init(
                        index: planned[i].index, code: .duplicateChange, field: nil,
                        message:
                            "change \(first) already changes \(planned[i].describe); one change per record in a save"
                    ))
            } else {
                seen[key] = planned[i].index
            }
        }
        let valid = planned.indices.filter { planned[$0].invalid == nil }
        let written = Set(valid.filter { planned[$0].writesRecord }.map { planned[$0].key })
        let deleted = Set(valid.filter { planned[$0].kind == .delete }.map { planned[$0].key })
        for i in planned.indices where planned[i].invalid == nil && !repeated.contains(planned[i].index) {
            let found = try await save.stored(planned[i].entity, identifier: planned[i].identifier)
            let version = found?.version
            let stored = version != nil
            planned[i].storedToken = version?.token
            planned[i].stored = found.map { ($0.key.keyValues, $0.version.values) }
            switch planned[i].kind {
            case .insert where stored:
                failures.append(
                    .init(
                        index: planned[i].index, code: .alreadyExists, field: nil,
                        message: "\(planned[i].describe) already exists"))
                continue
            case .update where !stored, .delete where !stored:
                failures.append(
                    .init(
                        index: planned[i].index, code: .notFound, field: nil,
                        message: "there is no \(planned[i].describe)"))
                continue
            case .update where planned[i].ifToken == nil && planned[i].references.isEmpty,
                .delete
            where planned[i].ifToken == nil:
                // Nothing more to check (the common case: no copy of the change).
                continue
            default:
                break
            }
            if planned[i].ifToken != nil {
                if let failure = try await planned[i].merge(with: version, policy: merge, in: save) {
                    failures.append(failure)
                    continue
                }
            }
            let p = planned[i]
            if p.skip { continue }
            // A new record has every required field.
            if p.kind == .insert || p.kind == .replace || (p.kind == .upsert && !stored) {
                if let field = p.entity.fields.first(where: { !$0.isOptional && p.values[$0.name] == nil }) {
                    failures.append(
                        .init(
                            index: p.index, code: .invalidValue, field: field.name,
                            message: "\(p.describe) lacks required field \(JSONText.quoted(field.name))"))
                    continue
                }
            }
            // Its references name records that are stored (and stay) or come with the set.
            for (relationship, target) in p.references {
                let targetEntity = try schema.entity(relationship.target)
                let key = PlannedChange.Key(entity: targetEntity.name, identifier: target)
                var there = written.contains(key)
                if !there, !deleted.contains(key) { there = try await save.exists(targetEntity, identifier: target) }
                if !there {
                    failures.append(
                        .init(
                            index: p.index, code: .danglingReference, field: relationship.name,
                            message: "\(p.describe): \(SaveContext.missing(targetEntity.name, target))"
                                + (deleted.contains(key) ? ", which this save deletes" : "")))
                    break
                }
            }
        }
        if !failures.isEmpty { throw SaveRefusal(failures: failures.sorted { $0.index < $1.index }) }
        return planned
    }
}

/// A change read against the schema: its entity, identifier and values
/// converted to the fields' types, or why it cannot be.
struct PlannedChange: Sendable {
    struct Key: Hashable, Sendable {
        var entity: String
        var identifier: [Value]
    }

    let index: Int
    let kind: ChangeSet.Kind
    let entity: EntitySchema
    /// The record's fields (insert, upsert, replace) or those an update sets, converted.
    var values: [String: Value] = [:]
    var identifier: [Value] = []
    /// The selection of this record (update, delete).
    var selection: RowSelection?
    /// Why the change is wrong in itself, whatever is stored.
    var invalid: SaveRefusal.Failure?
    /// The token its record was read at.
    let ifToken: HistoryToken?
    /// Whether the merge left it nothing to write (``ChangeSet/MergePolicy/storeTrump``).
    var skip = false
    /// The token of its record's last change, as the save's check read it.
    var storedToken: HistoryToken?
    /// Its record's key and values, as the save's check read them.
    var stored: (key: [Value], values: [Value])?

    /// - Parameter filters: the SQL that selects a record of an entity by
    ///   its identifier, by entity name, made once for a save's changes.
    init(
        index: Int, _ change: ChangeSet.Change, schema: StoreSchema, dialect: any SQLDialect,
        filters: inout [String: String]
    ) throws {
        self.index = index
        self.kind = change.kind
        self.ifToken = change.ifToken
        entity = try schema.entity(change.entity)
        do {
            if let token = change.ifToken {
                if kind == .insert {
                    throw Refused(
                        field: nil, message: "an insert takes no if_token: its record is new, read at no token")
                }
                if token.change != 0 {
                    throw Refused(
                        field: nil, message: "if_token \(token) names part of a transaction; give a whole one")
                }
            }
            switch kind {
            case .insert, .upsert, .replace:
                for (name, value) in change.record { values[name] = try Self.convert(value, name, of: entity) }
                identifier = try entity.identifier.map { name in
                    guard let value = values[name], !value.isNull else {
                        throw Refused(
                            field: name, message: "the record lacks its identifier field \(JSONText.quoted(name))")
                    }
                    if let problem = Identifier.problem(value) {
                        throw Refused(field: name, message: "identifier field \(JSONText.quoted(name)): \(problem)")
                    }
                    return value
                }
            case .update, .delete:
                guard change.identifier.count == entity.identifier.count else {
                    throw Refused(
                        field: nil,
                        message: "the identifier of \(JSONText.quoted(entity.name)) is "
                            + (entity.identifier.count == 1
                                ? "one value (\(entity.identifier[0]))"
                                : "an array of \(entity.identifier.count) values ("
                                    + entity.identifier.joined(separator: ", ") + ")")
                            + ", not \(change.identifier.count)")
                }
                identifier = try zip(entity.identifier, change.identifier).map { name, value in
                    try Self.convert(value, name, of: entity)
                }
                // The record by its identifier: the same text for every
                // save of the entity (its statements cached), no predicate to compile.
                let names = entity.identifier
                let sql =
                    filters[entity.name]
                    ?? names.enumerated().map { k, name in
                        "\(SQL.quote(name)) = \(dialect.placeholder(k + 1))"
                    }.joined(separator: " AND ")
                filters[entity.name] = sql
                var filter = SQLFragment(sql: sql, arguments: identifier)
                filter.recurs = true
                selection = RowSelection(entity, .matching(filter), in: schema)
                if kind == .update {
                    guard !change.set.isEmpty else {
                        throw Refused(field: nil, message: "an update sets at least one field")
                    }
                    for (name, value) in change.set {
                        if entity.identifier.contains(name) {
                            throw Refused(
                                field: name,
                                message:
                                    "field \(JSONText.quoted(name)) is part of the identifier and cannot be updated; "
                                    + "delete the record and insert it under its new identifier")
                        }
                        values[name] = try Self.convert(value, name, of: entity)
                    }
                }
            }
        } catch let refused as Refused {
            invalid = .init(index: index, code: .invalidValue, field: refused.field, message: refused.message)
        }
    }

    private struct Refused: Error {
        var field: String?
        var message: String
    }

    private static func convert(_ value: Value, _ name: String, of entity: EntitySchema) throws -> Value {
        do {
            return try ValueConversion.convert(value, to: try entity.field(named: name))
        } catch let error as DepotError {
            throw Refused(field: name, message: error.message)
        }
    }

    var key: Key { Key(entity: entity.name, identifier: identifier) }
    var writesRecord: Bool { kind == .insert || kind == .upsert || kind == .replace }

    /// The record, as errors name it: `Trip "T1"`.
    var describe: String {
        var id = ""
        Identifier.appendJSON(identifier, to: &id)
        return "\(entity.name) \(id)"
    }

    /// The to-one references the change sets, and the identifiers they name (nulls left out).
    var references: [(Relationship, [Value])] {
        entity.relationships.compactMap { r -> (Relationship, [Value])? in
            guard r.isToOne, let columns = entity.relationshipColumns[r.name] else { return nil }
            let named = columns.map { values[$0] }
            guard named.allSatisfy({ $0 != nil && !$0!.isNull }) else { return nil }
            return (r, named.map { $0! })
        }
    }

    /// The failure a change's write ended in: a delete rule that denies, a
    /// value the writer refused; nil for an error of the store itself.
    func failure(_ error: DepotError) -> SaveRefusal.Failure? {
        let code: SaveRefusal.Code
        switch error.code {
        case .conflict where kind == .delete: code = .deniedByDeleteRule
        case .conflict: code = .conflict
        case .invalidArgument, .typeMismatch, .unknownField: code = .invalidValue
        default: return nil
        }
        return .init(index: index, code: code, field: nil, message: error.message)
    }

    /// Writes the change in `save`.
    func apply<Backend: StoreBackend>(in save: Backend.Context, backend: Backend) async throws -> ChangeOutcome {
        var effect: ChangeOutcome.Effect
        if skip {
            return ChangeOutcome(
                index: index, entity: entity.name, identifier: identifier, kind: kind, effect: .unchanged,
                storedToken: storedToken)
        }
        switch kind {
        case .insert, .upsert, .replace:
            let columns = entity.fields.map(\.name).filter { values[$0] != nil }
            var batch = RecordBatch(entity: entity.name, columns: columns, reservingCapacity: 1)
            batch.append(columns.map { values[$0]! })
            let policy: ConflictPolicy = kind == .insert ? .fail : kind == .upsert ? .upsert : .replace
            let counts = try await save.write(
                try backend.prepare(batch, BatchOptions(policy: policy, deferReferences: true)))
            if let rejection = counts.rejections.first {
                throw DepotError(.invalidArgument, "\(describe): \(rejection.reason)")
            }
            effect = counts.inserted > 0 ? .inserted : counts.updated > 0 ? .updated : .unchanged
        case .update:
            let assignments = try Assignments.resolve(values, in: entity)
            if let stored {
                // The record as the check read it, in this transaction: not read again.
                let changed = try await save.update(
                    Backend.Context.RecordKey(row: stored.key[...], of: entity), identifier: identifier, of: entity,
                    stored: stored.values, assignments: assignments, in: backend.settings.schema)
                effect = changed ? .updated : .unchanged
            } else {
                let counts = try await save.updateRows(selection!, assignments: assignments, after: .start, limit: 1)
                    .counts
                effect = counts.updated > 0 ? .updated : .unchanged
            }
        case .delete:
            let (rows, _) = try await save.deleteRows(selection!, limit: 1)
            effect = .deleted
            if rows == 0 {
                throw SaveRefusal(failures: [
                    .init(index: index, code: .notFound, field: nil, message: "there is no \(describe)")
                ])
            }
        }
        return ChangeOutcome(
            index: index, entity: entity.name, identifier: identifier, kind: kind, effect: effect,
            storedToken: effect == .unchanged ? storedToken : nil)
    }
}

/// A group of saves counted in its store's ``WriteDemand`` until it holds
/// the writer (or gave up), once.
private final class Waiting: Sendable {
    private let demand: WriteDemand
    private let done = Mutex(false)

    init(_ demand: WriteDemand) {
        self.demand = demand
        demand.begin()
    }

    func served() {
        let first = done.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { demand.end() }
    }
}
