import DepotWire
import Foundation

/// What a revert takes back (DESIGN §17): one history transaction, or every
/// transaction a job saved.
public enum RevertTarget: Sendable, Hashable {
    case token(HistoryToken)
    case job(String)
}

/// What a revert does with a record changed again, in the same fields,
/// after what it takes back.
public enum RevertConflictPolicy: String, Sendable, CaseIterable, Codable {
    /// Leave the record as it is and list it in the rejects (the default).
    case skip
    /// Fail the job: a conflict found before anything is written writes nothing.
    case fail
    /// Take the change back all the same.
    case force
}

/// Where a revert stands after a save, committed with it: the transaction
/// being taken back (an index in the list, newest first) and the place in it.
struct RevertCheckpoint: Codable, Sendable {
    var transaction: Int
    var after: HistoryToken
    var counters: Counters
    var rejectsLength: Int64
    var done: Bool

    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    static func decode(_ bytes: [UInt8]) -> RevertCheckpoint? {
        try? JSONDecoder().decode(RevertCheckpoint.self, from: Data(bytes))
    }
}

extension StoreBackend {
    /// Writes the inverse of a history transaction or of a job's (DESIGN
    /// §17) as new transactions by `author`: an insert is deleted (its delete
    /// rules apply), a delete inserted again with its old values, an
    /// update's fields set back to their old values. The newest transaction
    /// is taken back first; cascades and nullified references logged with a
    /// delete are changes of its transaction, and come back with it.
    ///
    /// A record changed again since, in the fields the change wrote (any
    /// field for an insert; a record stored again under a deleted one's
    /// identifier), is a conflict: under `skip` it is left as it is and
    /// listed in `rejectsPath`; under `fail` the job fails (before writing,
    /// when it is found by the first pass); under `force` it is taken back.
    ///
    /// Runs in saves with a checkpoint, like every job: resumed, it goes on
    /// after the last change taken back.
    ///
    /// - Throws: ``DepotError`` `invalidToken` for a token never issued,
    ///   `historyExpired` for a pruned one, `invalidArgument` for a job that
    ///   saved nothing or changes of an entity that keeps no values.
    @discardableResult
    public func revert(
        _ target: RevertTarget, onConflict policy: RevertConflictPolicy = .skip, author: String, job: String? = nil,
        batchSize: Int? = nil, rejectsPath: String? = nil, progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        var resumed: RevertCheckpoint?
        if let job, let bytes = try await checkpoint(job: job) { resumed = RevertCheckpoint.decode(bytes) }
        var total = WriteCounts()
        if let resumed {
            total.counters = resumed.counters
            if resumed.done { return total }
        }
        let transactions = try await revertedTransactions(target)
        let chunk = min(max(1, batchSize ?? settings.saveEvery), 4_096)
        // A first pass reads every change before anything is written: under
        // `fail` for conflicts, and when an entity of the store keeps no
        // values (a change of it refuses the job). Otherwise each save
        // checks its changes before it writes them.
        let someWithoutValues = settings.schema.entities.contains { $0.history != .values }
        if resumed == nil, policy == .fail || someWithoutValues {
            for t in transactions {
                try await forEachPage(of: t, after: HistoryToken(t.id - 1), size: chunk) { changes, _ in
                    for c in changes { try self.checkRevertible(c) }
                    if policy == .fail {
                        let conflicts = try await self.revertConflicts(changes, newest: transactions[0].id)
                        if let first = conflicts.first { throw first }
                    }
                }
            }
        }
        let rejects = try rejectsPath.map { try RejectsFile(path: $0, truncateTo: resumed?.rejectsLength ?? 0) }
        let size = max(1, batchSize ?? settings.saveEvery)
        var index = resumed?.transaction ?? 0
        var after = resumed?.after ?? transactions.first.map { HistoryToken($0.id - 1) } ?? HistoryToken(0)
        let newest = transactions.first?.id ?? 0
        // Where the last bulk page ended: its token and the backend's place
        // of its last change (``WriteContext/bulkRevert``).
        var place: (token: HistoryToken, last: Int64)?
        while index < transactions.count {
            try Task.checkCancellation()
            let (startIndex, startAfter, startPlace, before) = (index, after, place, total.counters)
            let outcome = try await withSave(author: author, job: job) { save in
                let clock = ContinuousClock(), began = clock.now
                var counts = WriteCounts()
                var (index, after, place, taken) = (startIndex, startAfter, startPlace, 0)
                // The transaction is taken back whole: the next one, newest first.
                func nextTransaction() {
                    index += 1
                    if index < transactions.count { after = HistoryToken(transactions[index].id - 1) }
                }
                while index < transactions.count && taken < size
                    && (taken == 0 || clock.now - began < self.settings.saveInterval)
                {
                    let t = transactions[index]
                    let skip = after.id == t.id ? after.change : 0
                    if let bulk = try await save.bulkRevert(
                        transaction: t.id, skip: skip, after: place?.token == after ? place?.last : nil,
                        limit: min(chunk, size - taken), newest: newest)
                    {
                        counts.add(bulk.counts)
                        taken += bulk.taken
                        if bulk.continues {
                            after = HistoryToken(t.id, change: skip + bulk.taken)
                            place = (after, bulk.last)
                        } else {
                            nextTransaction()
                        }
                        continue
                    }
                    let page = try await self.reads.history(
                        after: after, entity: nil, author: nil, limit: 1, maxChanges: min(chunk, size - taken))
                    guard let read = page.first, read.token.id == t.id, !read.changes.isEmpty else {
                        nextTransaction()
                        continue
                    }
                    for c in read.changes { try self.checkRevertible(c) }
                    let done = try await self.revertChanges(read.changes, save: save, policy: policy, newest: newest)
                    try rejects?.append(done.rejects)
                    counts.add(done.counts)
                    taken += read.changes.count
                    after = read.token
                    if !read.continues { nextTransaction() }
                }
                if let job {
                    var counters = before
                    counters.add(counts.counters)
                    let checkpoint = RevertCheckpoint(
                        transaction: index, after: after, counters: counters, rejectsLength: rejects?.length ?? 0,
                        done: index >= transactions.count)
                    try await save.setCheckpoint(job: job, data: try checkpoint.encoded())
                }
                return (counts.counters, index, after, place)
            }
            total.counters.add(outcome.value.0)
            (index, after, place) = (outcome.value.1, outcome.value.2, outcome.value.3)
            progress?(total)
        }
        return total
    }

    /// Takes back `changes` of one transaction in `save`: deletes first (the
    /// records come back, so that what referred to them finds them), then
    /// updates, then inserts.
    private func revertChanges(
        _ changes: [HistoryChange], save: Context, policy: RevertConflictPolicy, newest: Int64
    ) async throws -> (counts: WriteCounts, rejects: [String]) {
        let schema = settings.schema
        var counts = WriteCounts()
        var rejects: [String] = []
        var batches: [String: RecordBatch] = [:]
        let ordered =
            changes.filter { $0.kind == .delete } + changes.filter { $0.kind == .update }
            + changes.filter { $0.kind == .insert }
        func flush() async throws {
            for (_, batch) in batches.sorted(by: { $0.key < $1.key }) {
                counts.add(
                    try await save.write(try prepare(batch, BatchOptions(policy: .replace, deferReferences: true))))
            }
            batches = [:]
        }
        for (i, c) in ordered.enumerated() {
            if i > 0, c.kind != .delete, ordered[i - 1].kind == .delete { try await flush() }
            let entity = try schema.entity(c.entity)
            let identifier = try RevertChange.identifier(c, entity)
            let stored = try await save.version(entity, identifier: identifier)
            var reason = RevertChange.conflict(c, entity, stored: stored, newest: newest)
            if reason != nil, policy == .force, stored != nil || c.kind == .delete { reason = nil }
            if let reason {
                if policy == .fail {
                    throw DepotError(.conflict, "\(c.entity) \(c.identifier) was \(reason); the revert stops here")
                }
                var line = "{\"entity\":"
                JSONText.appendQuoted(c.entity, to: &line)
                line += ",\"identifier\":\(c.identifier),\"kind\":\"\(c.kind.rawValue)\",\"reason\":"
                JSONText.appendQuoted(reason, to: &line)
                rejects.append(line + "}")
                counts.reject(Rejection(row: i, field: nil, reason: reason))
                continue
            }
            let selection = RowSelection(
                entity, .matching(Self.identifierMatch(entity, identifier, settings.dialect)), in: schema)
            switch c.kind {
            case .delete:
                let old = try RevertChange.values(c.old, entity)
                let fields = entity.fields.map(\.name).filter { old[$0] != nil }
                var batch = batches[entity.name] ?? RecordBatch(entity: entity.name, columns: entity.fields.map(\.name))
                batch.append(entity.fields.map { fields.contains($0.name) ? old[$0.name]! : .null })
                batches[entity.name] = batch
            case .update:
                let old = try RevertChange.values(c.old, entity)
                let assignments = (c.fields ?? old.keys.sorted()).compactMap { name -> (Int, Value)? in
                    guard !entity.identifier.contains(name), let p = entity.position(of: name), let v = old[name] else {
                        return nil
                    }
                    return (p, v)
                }
                if assignments.isEmpty { continue }
                counts.add(
                    try await save.updateRows(
                        selection, assignments: assignments, after: .start, limit: 1, checkReferences: false
                    ).counts)
            case .insert:
                if stored == nil {
                    counts.unchanged += 1
                    continue
                }
                counts.add(try await save.deleteRows(selection, limit: 1).counts)
            }
        }
        try await flush()
        return (counts, rejects)
    }

    /// The records of `entity` whose identifier is `identifier`, in `dialect`.
    private static func identifierMatch(_ entity: EntitySchema, _ identifier: [Value], _ dialect: any SQLDialect)
        -> SQLFragment
    {
        SQLFragment(
            sql: entity.identifier.enumerated().map { "\(SQL.quote($1)) = \(dialect.placeholder($0 + 1))" }
                .joined(separator: " AND "), arguments: identifier, recurs: true)
    }

    /// Checks a revert as starting it would: the transactions exist and are
    /// kept, and the first changes of the newest keep their values.
    ///
    /// - Throws: the ``DepotError`` the job would fail with before writing.
    public func checkRevert(_ target: RevertTarget) async throws {
        let transactions = try await revertedTransactions(target)
        let page = try await reads.history(
            after: HistoryToken(transactions[0].id - 1), entity: nil, author: nil, limit: 1, maxChanges: 100)
        for c in page.first?.changes ?? [] { try checkRevertible(c) }
    }

    /// The transactions a revert takes back, newest first.
    private func revertedTransactions(_ target: RevertTarget) async throws -> [HistoryToken] {
        switch target {
        case .token(let token):
            guard token.isWhole else {
                throw DepotError(
                    .invalidToken, "revert takes a whole transaction's token, such as \(token.id), not \(token)")
            }
            let latest = try await reads.latestToken()?.id ?? 0
            guard token.id >= 1, token.id <= latest else {
                throw DepotError(.invalidToken, "token \(token) was never issued by store \(JSONText.quoted(name))")
            }
            let pruned = try await withBookkeeping { try await $0.prunedThrough() }
            if token.id <= pruned {
                throw DepotError(
                    .historyExpired,
                    "the history of token \(token) was pruned (through \(pruned)); it cannot be reverted")
            }
            let page = try await reads.history(
                after: HistoryToken(token.id - 1), entity: nil, author: nil, limit: 1, maxChanges: 1)
            guard page.first?.token.id == token.id else {
                throw DepotError(.invalidToken, "store \(JSONText.quoted(name)) has no transaction \(token)")
            }
            return [token]
        case .job(let id):
            let found = try await reads.transactions(ofJob: id)
            guard !found.isEmpty else {
                throw DepotError(
                    .invalidArgument,
                    "job \(JSONText.quoted(id)) saved no history transaction in store \(JSONText.quoted(name)), "
                        + "or its history was pruned")
            }
            let pruned = try await withBookkeeping { try await $0.prunedThrough() }
            if found[0].id <= pruned {
                throw DepotError(
                    .historyExpired,
                    "part of job \(JSONText.quoted(id))'s history was pruned (through \(pruned)); it cannot be reverted"
                )
            }
            return found.reversed()
        }
    }

    /// Hands `body` the changes of transaction `t` after `after`, `size` at a time.
    private func forEachPage(
        of t: HistoryToken, after: HistoryToken, size: Int,
        _ body: ([HistoryChange], HistoryToken) async throws -> Void
    ) async throws {
        var after = after
        while true {
            let page = try await reads.history(after: after, entity: nil, author: nil, limit: 1, maxChanges: size)
            guard let read = page.first, read.token.id == t.id, !read.changes.isEmpty else { return }
            try await body(read.changes, read.token)
            if !read.continues { return }
            after = read.token
        }
    }

    /// Refuses a change that cannot be taken back: its entity keeps no values.
    private func checkRevertible(_ c: HistoryChange) throws {
        let missing = c.kind == .insert ? c.new == nil : c.old == nil
        if missing {
            throw DepotError(
                .invalidArgument,
                "entity \(JSONText.quoted(c.entity)) keeps no values in its history (it needs history = \"values\"), "
                    + "so its changes cannot be reverted")
        }
    }

    /// The conflicts of `changes` as errors (a first pass under `fail`).
    private func revertConflicts(_ changes: [HistoryChange], newest: Int64) async throws -> [DepotError] {
        let schema = settings.schema
        var out: [DepotError] = []
        for c in changes {
            let entity = try schema.entity(c.entity)
            let identifier = try RevertChange.identifier(c, entity)
            let stored = try await reads.record(entity.name, identifier: identifier)
            if let reason = RevertChange.conflict(c, entity, stored: stored, newest: newest) {
                out.append(DepotError(.conflict, "\(c.entity) \(c.identifier): \(reason); nothing was reverted"))
            }
        }
        return out
    }
}

/// How one change is taken back.
enum RevertChange {
    /// The identifier of a change's record, typed as its entity's fields.
    static func identifier(_ c: HistoryChange, _ entity: EntitySchema) throws -> [Value] {
        let raw: [Value]
        switch MiniJSON.parse(c.identifier) {
        case .scalar(let v)?: raw = [v]
        case .array(let vs)?: raw = vs
        default:
            throw DepotError(.invalidArgument, "the history holds an identifier that does not read: \(c.identifier)")
        }
        guard raw.count == entity.identifierIndexes.count else {
            throw DepotError(.invalidArgument, "the history holds an identifier of another shape: \(c.identifier)")
        }
        return try zip(raw, entity.identifierIndexes).map { try ValueConversion.convert($0, to: entity.fields[$1]) }
    }

    /// The values of a change's `old` or `new` object, by field name,
    /// typed as the entity's fields.
    static func values(_ json: String?, _ entity: EntitySchema) throws -> [String: Value] {
        guard let json else { return [:] }
        var out: [String: Value] = [:]
        if case .object(let pairs)? = MiniJSON.parse(json) {
            for (name, v) in pairs {
                guard let field = try? entity.field(named: name) else { continue }
                out[name] = try ValueConversion.convert(v, to: field)
            }
            return out
        }
        // A json field's nested value: read whole.
        let object = try JSONDecoder().decode([String: JSONValue].self, from: Data(json.utf8))
        for (name, v) in object {
            guard let field = try? entity.field(named: name) else { continue }
            let value: Value =
                switch v {
                case .null: .null
                case .bool(let b): .bool(b)
                case .int(let i): .int(i)
                case .double(let d): .double(d)
                case .string(let s): field.type == .json ? .string(v.text) : .string(s)
                default: .string(v.text)
                }
            out[name] = try ValueConversion.convert(value, to: field)
        }
        return out
    }

    /// Why taking `c` back would overwrite a later change; nil when nothing
    /// changed it since. A record whose last change is after `newest` (the
    /// last transaction reverted) was changed since: a conflict when its
    /// values in the change's fields are no longer those the change wrote.
    static func conflict(_ c: HistoryChange, _ entity: EntitySchema, stored: RecordVersion?, newest: Int64) -> String? {
        switch c.kind {
        case .delete:
            return stored == nil ? nil : "stored again since it was deleted"
        case .insert, .update:
            guard let stored else { return "deleted since" }
            guard stored.token.id > newest else { return nil }
            guard let wrote = try? values(c.new, entity) else { return "changed since" }
            let names = c.kind == .update ? (c.fields ?? Array(wrote.keys)) : Array(wrote.keys)
            let changed = names.sorted().filter { name in
                guard let p = entity.position(of: name), let v = wrote[name] else { return false }
                return !Value.storedEqual(stored.values[p], v)
            }
            return changed.isEmpty ? nil : "changed since in " + changed.map(JSONText.quoted).joined(separator: ", ")
        }
    }
}
