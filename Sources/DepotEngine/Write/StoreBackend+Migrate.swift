import DepotWire
import Foundation
import Synchronization

/// Migrate jobs (DESIGN §18), written once over the primitives of
/// ``StoreBackend`` and ``WriteContext``.
///
/// A migration converts in three steps. First, in saves, each record's
/// `convert` values go to columns of their own (``FieldChange/shadow``),
/// or why it is rejected; the entity is served as the store held it all
/// along. A record changed after its conversion holds a token past the one
/// issued when that pass began (tokens grow, and saves are one at a time
/// on either backend), which the checkpoint keeps: a pass over those
/// records converts them again. Then the switch, one save:
/// the records changed since their conversion are converted again, the
/// rejected ones are written to the rejects file and deleted (logged, their
/// delete rules applied), the converted columns take the fields' names and
/// the store keeps the new definition; the schema served changes as it
/// commits. Last, an SQLite store empties the columns the switch retired,
/// a save at a time. Each save keeps the job's checkpoint, so a job killed
/// anywhere goes on where it was and converts, rejects and deletes each
/// record once.
extension StoreBackend {
    /// Runs entity `name`'s pending migration (``StoreSchema/migrations``)
    /// to its end, or goes on with the one `job` began.
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` when the entity has no
    ///   change to migrate; ``DepotError/Code/migrationRefused`` when every
    ///   record's conversion fails (nothing is changed).
    @discardableResult
    public func migrate(
        entity name: String, author: String, job: String?, batchSize: Int? = nil, rejectsPath: String? = nil,
        progress: (@Sendable (WriteCounts) -> Void)? = nil
    ) async throws -> WriteCounts {
        var resumed: MigrateCheckpoint?
        if let job, let bytes = try await checkpoint(job: job) { resumed = MigrateCheckpoint.decode(bytes) }
        var total = WriteCounts()
        if let resumed { total.counters = resumed.counters }
        let schema = settings.schema
        let size = max(1, batchSize ?? settings.saveEvery)
        let chunk = min(size, 4_096)
        guard let plan = schema.migrations[name] else {
            let entity = try schema.entity(name)
            // Switched already: what is left is to empty the retired columns.
            if let resumed, resumed.phase == .cleanup || resumed.phase == .done {
                if resumed.phase == .cleanup {
                    try await clearRetired(entity, from: resumed, author: author, job: job, size: size)
                }
                return total
            }
            throw DepotError(
                .invalidArgument,
                "entity \(JSONText.quoted(name)) has no change to migrate: the store holds it as configured")
        }
        if let r = resumed, r.digest != plan.digest || r.phase == .done || r.phase == .cleanup {
            // Another plan than the one the checkpoint was made under: start over.
            resumed = nil
            total = WriteCounts()
        }
        let compiled = try MigrationSelection(plan, schema: schema, dialect: settings.dialect, now: resumed?.now)
        let rejects = try rejectsPath.map { try RejectsFile(path: $0, truncateTo: 0) }
        if plan.keyChanged, try await reads.processors().contains(where: { $0.entity == name }) {
            throw DepotError(
                .conflict,
                "entity \(JSONText.quoted(name)) has processors, whose batches name records by their identifier; "
                    + "drop them (DELETE /v1/stores/\(self.name)/processors/NAME) before its identifier changes")
        }
        var state =
            resumed
            ?? MigrateCheckpoint(
                digest: plan.digest, phase: plan.changes.isEmpty ? .switching : .convert, counters: Counters(),
                now: compiled.now, retired: [])
        if resumed == nil {
            let first = state
            _ = try await withSave(author: author, job: job) { save in
                try await save.prepareMigration(plan, dialect: settings.dialect)
                if let job { try await save.setCheckpoint(job: job, data: try first.encoded()) }
            }
        }
        // The conversion, then once more for the records changed meanwhile.
        let interval = settings.saveInterval
        while state.phase == .convert || state.phase == .catchUp {
            try Task.checkCancellation()
            let selection = state.phase == .convert ? compiled.all : compiled.stale(state.since ?? 0)
            let before = state
            let next = try await withSave(author: author, job: job) { save in
                let clock = ContinuousClock(), began = clock.now
                var state = before
                // The pass's first save: records changed from now on may be
                // converted before their change, so the next pass takes them.
                if state.started == nil { state.started = try await save.lastIssuedToken(plan.serving) }
                var cursor = before.cursor(plan.serving)
                var more = true, taken = 0
                while more && taken < size && (taken == 0 || clock.now - began < interval) {
                    let done = try await save.convertRows(
                        selection, plan: plan, after: cursor, limit: min(chunk, size - taken))
                    if before.phase == .convert {
                        state.counters.read += done.count
                        state.counters.updated += done.count
                    }
                    taken += done.count
                    (cursor, more) = (done.cursor, done.more)
                }
                state.keep(more ? cursor : .start)
                if !more {
                    state.phase = before.phase == .convert ? .catchUp : .switching
                    (state.since, state.started) = (state.started, nil)
                }
                if let job { try await save.setCheckpoint(job: job, data: try state.encoded()) }
                return state
            }
            state = next.value
            total.counters = state.counters
            progress?(total)
        }
        // The switch, in one save.
        let before = settings.schemaBox.value
        let switched: MigrateCheckpoint
        let converted = state
        do {
            switched = try await withSave(author: author, job: job) { save in
                var state = converted
                var cursor = RowCursor.start
                var more = true
                while more {
                    let done = try await save.convertRows(
                        compiled.stale(converted.since ?? 0), plan: plan, after: cursor, limit: chunk)
                    (cursor, more) = (done.cursor, done.more)
                }
                if plan.keyChanged { try await save.markKeyRejects(plan, compiled) }
                let lines = try await save.rejectedRecords(compiled.rejected, plan: plan, chunk: chunk)
                let rejected = lines.count
                if rejected > 0, try await save.keys(compiled.kept, limit: 1).isEmpty {
                    throw DepotError(
                        .migrationRefused,
                        "entity \(JSONText.quoted(name)): the conversion of \(plan.summary) fails on every "
                            + "record (\(rejected)); nothing was changed. The first: "
                            + (lines.first ?? ""))
                }
                try rejects?.append(lines)
                var deleted = WriteCounts()
                while true {
                    let done = try await save.deleteRows(compiled.rejected, limit: size)
                    deleted.add(done.counts)
                    if done.rows < size { break }
                }
                // Converted and kept; the rejected ones are deleted.
                state.counters.updated = max(0, state.counters.read - rejected)
                state.counters.rejected = rejected
                state.counters.deleted = deleted.deleted
                let retired = try await save.switchMigration(plan, retiring: job ?? "now")
                state.retired = retired
                state.phase = retired.isEmpty ? .done : .cleanup
                state.keep(.start)
                if let job { try await save.setCheckpoint(job: job, data: try state.encoded()) }
                // Served as configured from this commit on.
                self.settings.schemaBox.set(before.switched(to: plan.target))
                return state
            }.value
        } catch {
            settings.schemaBox.set(before)
            throw error
        }
        total.counters = switched.counters
        progress?(total)
        if switched.phase == .cleanup {
            try await clearRetired(plan.target, from: switched, author: author, job: job, size: size)
        }
        return total
    }

    /// Empties the columns a switch retired, a save at a time.
    private func clearRetired(
        _ entity: EntitySchema, from state: MigrateCheckpoint, author: String, job: String?, size: Int
    ) async throws {
        var state = state
        while state.phase == .cleanup {
            try Task.checkCancellation()
            let before = state
            state = try await withSave(author: author, job: job) { save in
                var state = before
                let next = try await save.clearRetired(
                    entity, columns: before.retired, after: before.cursor(entity), limit: max(size, 10_000))
                if let next { state.keep(next) } else { state.phase = .done }
                if let job { try await save.setCheckpoint(job: job, data: try state.encoded()) }
                return state
            }.value
        }
    }

    /// What a migration of entity `name` to `target` would do, changing
    /// nothing (`depotctl migrate S --dry-run`): the records, and each one
    /// whose conversion fails with the field, the reason and the value.
    ///
    /// - Parameter target: the entity as configured now; nil for the
    ///   migration the store runs already.
    public func migrationPreview(entity name: String, target: EntitySchema?) async throws -> MigrationPreview {
        let schema = settings.schema
        let plan: MigrationPlan
        if let target {
            guard let preview = try MigrationPlan.preview(target, in: schema) else {
                return MigrationPreview(entity: name, changes: [], records: 0, rejects: [])
            }
            plan = preview
        } else if let pending = schema.migrations[name] {
            plan = pending
        } else {
            _ = try schema.entity(name)
            return MigrationPreview(entity: name, changes: [], records: 0, rejects: [])
        }
        let compiled = try MigrationSelection(plan, schema: schema, dialect: settings.dialect, now: nil)
        var descriptor = FetchDescriptor(entity: name)
        descriptor.fields = plan.serving.identifier
        descriptor.computed = plan.changes.enumerated().map {
            ComputedField("depot:convert:\($0.offset)", $0.element.convert)
        }
        var records = 0
        var rejects: [MigrationPreview.Reject] = []
        for try await batch in reads.enumerate(descriptor, batchSize: 5_000) {
            let ids = plan.serving.identifier.count
            for row in batch.rows {
                records += 1
                for (k, change) in plan.changes.enumerated() {
                    if case .failure(let error) = UpdatePlan.convert(
                        row[ids + k], computedAs: compiled.types[k], to: change.to)
                    {
                        rejects.append(
                            MigrationPreview.Reject(
                                identifier: Identifier(Array(row[..<ids])), field: change.to.name,
                                reason: error.message, value: row[ids + k]))
                        break
                    }
                }
            }
        }
        if plan.keyChanged {
            // As the switch finds them: a null in the new identifier, then
            // all but the first stored of each group sharing one.
            var seen = Set(rejects.map(\.identifier))
            let key = plan.target.identifier
            var nulls = FetchDescriptor(entity: name, where: key.map { "\($0) == nil" }.joined(separator: " OR "))
            nulls.fields = plan.serving.identifier
            for id in try await reads.identifiers(nulls) where seen.insert(id).inserted {
                rejects.append(
                    MigrationPreview.Reject(
                        identifier: id, field: key.joined(separator: ","), reason: compiled.nullKeyReason,
                        value: .null))
            }
            let found = Mutex<[Identifier]>([])
            try await reads.duplicates(entity: name, by: key, where: nil, arguments: [:], limit: nil) { group in
                found.withLock { $0 += group.identifiers.dropFirst() }
            }
            for id in found.withLock({ $0 }) where seen.insert(id).inserted {
                rejects.append(
                    MigrationPreview.Reject(
                        identifier: id, field: key.joined(separator: ","), reason: compiled.duplicateKeyReason,
                        value: .null))
            }
        }
        return MigrationPreview(
            entity: name,
            changes: plan.changes.map {
                MigrationPreview.Change(
                    field: $0.to.name, from: $0.from?.declaration, to: $0.to.declaration, convert: $0.convert)
            }, records: records, rejects: rejects)
    }
}

/// What a migration would do (``StoreBackend/migrationPreview(entity:target:)``).
public struct MigrationPreview: Sendable {
    public struct Change: Sendable {
        public var field: String
        /// The stored declaration; nil for a new field.
        public var from: String?
        public var to: String
        public var convert: String
    }

    public struct Reject: Sendable {
        public var identifier: Identifier
        public var field: String
        public var reason: String
        /// The value the conversion gave.
        public var value: Value
    }

    public var entity: String
    /// Empty when the entity has nothing to migrate.
    public var changes: [Change]
    public var records: Int
    public var rejects: [Reject]
    /// Whether the migration would fail: every record rejected.
    public var fails: Bool { records > 0 && rejects.count == records }
}

extension MigrationPlan {
    /// The plan that opening `target` over the entity `schema` serves now
    /// would make; nil when it needs none.
    ///
    /// - Throws: ``DepotError/Code/migrationRefused`` for a change no
    ///   conversion explains.
    package static func preview(_ target: EntitySchema, in schema: StoreSchema) throws -> MigrationPlan? {
        let current = try schema.entity(target.name)
        let stored = MigrationRules.Definition(current)
        // Optional fields made required: counted as if null were held (the
        // preview reads the records; a convert is needed only if one is).
        let nulls = Dictionary(
            MigrationRules.fieldsBecomingRequired(target, stored: stored).map { ($0, 1) },
            uniquingKeysWith: { a, _ in a })
        let outcome = MigrationRules.check(target, stored: stored, nulls: nulls)
        guard outcome.problems.isEmpty else {
            throw DepotError(
                .migrationRefused,
                "store \(JSONText.quoted(schema.name)) cannot take this configuration: "
                    + outcome.problems.joined(separator: "; "))
        }
        guard !outcome.changes.isEmpty else { return nil }
        return MigrationPlan(
            target: target, serving: try MigrationRules.serving(target, stored: stored, changes: outcome.changes),
            changes: outcome.changes)
    }

    /// Whether `target` renames a field the entity served does not hold
    /// under its new name yet: a rename the next open (or reload) applies,
    /// which a preview cannot look past.
    package static func renamesPending(_ target: EntitySchema, in schema: StoreSchema) -> Bool {
        guard let served = try? schema.entity(target.name) else { return true }
        return target.fieldsRenamedFrom.keys.contains { served.position(of: $0) == nil }
    }

    /// Whether the plan's expressions compile over the entity served, and
    /// give values their fields can hold (checked when a store opens, so
    /// that a wrong `convert` is refused at start, naming its field).
    package static func problems(
        _ plans: [MigrationPlan], served: [EntitySchema], store: String, dialect: any SQLDialect
    )
        -> [String]
    {
        guard !plans.isEmpty else { return [] }
        let schema = StoreSchema(name: store, entities: served, migrations: plans)
        var problems: [String] = []
        for plan in plans {
            if plan.keyChanged, let r = IncomingReference.all(to: plan.serving, in: served).first {
                problems.append(
                    "entity \(JSONText.quoted(plan.target.name)): the identifier changed from "
                        + "\(plan.serving.identifier) to \(plan.target.identifier), but relationship "
                        + "\(JSONText.quoted(r.relationship.name)) of \(JSONText.quoted(r.source.name)) refers to "
                        + "its records by it; export the records and import them into a new entity")
            }
            for change in plan.changes {
                do {
                    _ = try MigrationSelection(
                        MigrationPlan(target: plan.target, serving: plan.serving, changes: [change]), schema: schema,
                        dialect: dialect, now: nil)
                } catch let error as DepotError {
                    // The message names the field already, as `convert "budget": …`.
                    let reason = error.message.replacingOccurrences(
                        of: "convert \(JSONText.quoted(change.to.name)): ", with: "")
                    problems.append(
                        "entity \(JSONText.quoted(plan.target.name)), field \(JSONText.quoted(change.to.name)): "
                            + "convert \(JSONText.quoted(change.convert)): \(reason)")
                } catch {
                    problems.append("entity \(JSONText.quoted(plan.target.name)): \(error)")
                }
            }
        }
        return problems
    }
}

/// A migration's expressions compiled in a store's dialect, and the
/// records its steps take.
struct MigrationSelection {
    /// Every record, with its converted values.
    let all: RowSelection
    /// The records changed after the token (the one issued when the pass
    /// that converted them began), or inserted since: their conversion may
    /// be older than their values.
    let stale: @Sendable (_ after: Int64) -> RowSelection
    /// The records whose conversion failed.
    let rejected: RowSelection
    /// The records whose conversion did not fail.
    let kept: RowSelection
    /// The type of each change's computed values.
    let types: [FieldType?]
    let now: String

    init(_ plan: MigrationPlan, schema: StoreSchema, dialect: any SQLDialect, now: String?) throws {
        let columns = try PredicateCompiler.compute(
            plan.changes.map { ($0.to.name, $0.convert) }, where: nil, entity: plan.serving, schema: schema,
            arguments: [:], dialect: dialect, now: now, label: "convert")
        for (column, change) in zip(columns.columns, plan.changes) {
            try UpdatePlan.check(column, fits: change.to, label: "convert")
        }
        let filter = columns.filter
        @Sendable func matching(_ sql: String, computed: Bool) -> RowSelection {
            var f = filter
            f.sql = "(\(filter.sql)) AND (\(sql))"
            if !computed {
                // The computed columns' arguments are bound only with them.
                f = SQLFragment(sql: sql, arguments: Array(filter.arguments.dropFirst(columns.columnArguments)))
            }
            return RowSelection(plan.serving, .matching(f), in: schema, computed: computed ? columns.columns : [])
        }
        let reject = SQL.quote(MigrationPlan.rejectColumn)
        all = RowSelection(plan.serving, .matching(filter), in: schema, computed: columns.columns)
        // The token is the job's own number, not a user's: written in the SQL.
        stale = { token in matching("coalesce(depot_token, 0) > \(token)", computed: true) }
        let reason = ComputedColumns.Column(name: MigrationPlan.rejectColumn, sql: reject, type: .string)
        rejected = RowSelection(
            plan.serving,
            .matching(
                SQLFragment(
                    sql: "\(reject) IS NOT NULL", arguments: Array(filter.arguments.dropFirst(columns.columnArguments)))
            ),
            in: schema, computed: [reason])
        kept = matching("\(reject) IS NULL", computed: false)
        types = columns.columns.map(\.type)
        self.now = columns.now
        let key = plan.target.identifier
        let names = "(" + key.joined(separator: ", ") + ")"
        nullKeyReason = "the new identifier \(names) holds null"
        duplicateKeyReason = "another record has the same new identifier \(names); the first stored is kept"
        if plan.keyChanged {
            nullKeys = RowSelection(
                plan.serving,
                .matching(
                    SQLFragment(sql: key.map { "\(SQL.quote($0)) IS NULL" }.joined(separator: " OR "), arguments: [])),
                in: schema)
            duplicateKeys = RowSelection(
                plan.serving,
                .redundant(
                    try DuplicateQuery(
                        entity: plan.serving, schema: schema, by: key, predicate: nil, arguments: [:], dialect: dialect),
                    keep: .keepFirst), in: schema)
        } else {
            (nullKeys, duplicateKeys) = (nil, nil)
        }
    }

    /// A new identifier's records whose key holds null, and all but the first stored of each group sharing one.
    let nullKeys: RowSelection?
    let duplicateKeys: RowSelection?
    let nullKeyReason: String
    let duplicateKeyReason: String
}

/// Where a migrate job stands, kept in each of its saves.
struct MigrateCheckpoint: Codable, Sendable {
    enum Phase: String, Codable, Sendable {
        /// Converting every record.
        case convert
        /// Converting the records changed during the conversion.
        case catchUp
        /// Ready for the switch.
        case switching
        /// Switched; emptying the retired columns.
        case cleanup
        case done
    }

    var digest: String
    var phase: Phase
    var counters: Counters
    /// What `now()` stood for when the job began.
    var now: String
    /// The columns the switch retired (an SQLite store's), to empty.
    var retired: [String]
    var rowid: Int64?
    var identifier: [String?]?
    /// The token issued when the pass before this one began: the records
    /// past it take this pass (nil: every record, the first pass).
    var since: Int64?
    /// The token issued when this pass began (set at its first save).
    var started: Int64?

    init(digest: String, phase: Phase, counters: Counters, now: String, retired: [String]) {
        self.digest = digest
        self.phase = phase
        self.counters = counters
        self.now = now
        self.retired = retired
    }

    mutating func keep(_ cursor: RowCursor) { (rowid, identifier) = UpdateCheckpoint.kept(cursor) }

    func cursor(_ entity: EntitySchema) -> RowCursor {
        UpdateCheckpoint.cursor(rowid: rowid, identifier: identifier, entity)
    }

    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    static func decode(_ bytes: [UInt8]) -> MigrateCheckpoint? {
        try? JSONDecoder().decode(MigrateCheckpoint.self, from: Data(bytes))
    }
}

/// A record's converted values, or why its conversion failed.
public struct ConvertedRow<Key: Sendable>: Sendable {
    public var key: Key
    /// The values of the plan's changes, in their order (empty for a reject).
    public var values: [Value]
    /// Why the conversion failed, as a rejects file's JSON object.
    public var reject: String?
}

extension WriteContext {
    /// The last token the store issued, read in this save: a save after it
    /// gets a larger one. (``history(of:identifier:after:through:)`` asked
    /// for no change answers the history's bounds alone.)
    func lastIssuedToken(_ entity: EntitySchema) async throws -> Int64 {
        try await history(of: entity, identifier: [], after: 0, through: 0).lastIssued
    }

    /// Converts the records of `selection` after `cursor`, at most `limit`.
    func convertRows(_ selection: RowSelection, plan: MigrationPlan, after cursor: RowCursor, limit: Int)
        async throws -> (count: Int, cursor: RowCursor, more: Bool)
    {
        let (found, next) = try await records(selection, positions: [], after: cursor, limit: limit)
        var rows: [ConvertedRow<RecordKey>] = []
        rows.reserveCapacity(found.count)
        next: for record in found {
            var values: [Value] = []
            for (k, change) in plan.changes.enumerated() {
                switch UpdatePlan.convert(record.values[k], computedAs: selection.computed[k].type, to: change.to) {
                case .success(let v):
                    values.append(v)
                case .failure(let error):
                    var line = "{\"field\":"
                    JSONText.appendQuoted(change.to.name, to: &line)
                    line += ",\"reason\":"
                    JSONText.appendQuoted(error.message, to: &line)
                    line += ",\"value\":"
                    JSONText.append(record.values[k], rawJSON: false, to: &line)
                    rows.append(ConvertedRow(key: record.key, values: [], reject: line + "}"))
                    continue next
                }
            }
            rows.append(ConvertedRow(key: record.key, values: values, reject: nil))
        }
        if !rows.isEmpty { try await writeConverted(rows, plan: plan) }
        return (found.count, next, found.count == limit)
    }

    /// Marks rejected, for a new identifier, the records whose key holds
    /// null, then all but the first stored of each group sharing one.
    func markKeyRejects(_ plan: MigrationPlan, _ compiled: MigrationSelection) async throws {
        let field = plan.target.identifier.joined(separator: ",")
        for (selection, reason) in [
            (compiled.nullKeys, compiled.nullKeyReason), (compiled.duplicateKeys, compiled.duplicateKeyReason)
        ] {
            guard let selection else { continue }
            var line = "{\"field\":"
            JSONText.appendQuoted(field, to: &line)
            line += ",\"reason\":"
            JSONText.appendQuoted(reason, to: &line)
            line += ",\"value\":null}"
            let keys = try await keys(selection, limit: Int(Int32.max))
            for start in stride(from: 0, to: keys.count, by: 4_096) {
                try await writeConverted(
                    keys[start..<min(start + 4_096, keys.count)].map {
                        ConvertedRow(key: $0, values: [], reject: line)
                    },
                    plan: plan)
            }
        }
    }

    /// The rejects file's lines of the records whose conversion failed:
    /// each its identifier, the field, the reason, the value, and the
    /// whole record as stored (the migration deletes it).
    func rejectedRecords(_ selection: RowSelection, plan: MigrationPlan, chunk: Int) async throws -> [String] {
        let entity = plan.serving
        let positions = Array(entity.fields.indices)
        var lines: [String] = []
        var cursor = RowCursor.start
        while true {
            let (found, next) = try await records(selection, positions: positions, after: cursor, limit: chunk)
            for record in found {
                var line = "{\"identifier\":"
                Identifier.appendJSON(record.identifier, to: &line)
                // The reason's object (the selection's one computed column), its braces dropped.
                if case .string(let reason) = record.values[positions.count], reason.count > 2 {
                    line += "," + String(reason.dropFirst().dropLast())
                }
                line +=
                    ",\"record\":"
                    + SaveContext.object(entity, Array(zip(positions, record.values[..<positions.count])))
                lines.append(line + "}")
            }
            if found.count < chunk { break }
            cursor = next
        }
        return lines
    }
}

extension WriteContext {
    /// Empties `columns` of at most `limit` records of `entity` after
    /// `cursor`; the cursor after them, nil when none is left. Only a
    /// backend whose switch renames the columns it retires (SQLite:
    /// dropping a column rewrites the table) retires any, and it names its
    /// records by rowid.
    func clearRetired(_ entity: EntitySchema, columns: [String], after cursor: RowCursor, limit: Int) async throws
        -> RowCursor?
    {
        guard !columns.isEmpty else { return nil }
        let after: Int64 = if case .rowid(let rowid) = cursor { rowid } else { 0 }
        guard
            let last = try await scalar(
                "SELECT max(rowid) FROM (SELECT rowid FROM \(table: entity) WHERE rowid > \(bind: after) ORDER BY rowid LIMIT \(bind: limit))"
            )?.integer
        else { return nil }
        let cleared = columns.map { "\(SQL.quote($0)) = NULL" }.joined(separator: ", ")
        try await execute(
            "UPDATE \(table: entity) SET \(sql: cleared) WHERE rowid > \(bind: after) AND rowid <= \(bind: last)")
        return .rowid(last)
    }
}

extension WriteContext {
    /// Adds the columns `plan` writes to until its switch (each change's
    /// ``FieldChange/shadow`` and ``MigrationPlan/rejectColumn``), empty:
    /// those a migration that did not finish left (a job that starts over)
    /// are dropped and added again where the dialect drops a column in no
    /// time (so they take the type this plan writes), else emptied (only
    /// the records it converted hold values). Written once, in the dialect.
    package func prepareMigration(_ plan: MigrationPlan, dialect: any SQLDialect) async throws {
        let entity = plan.serving
        let listing: SQLStatement = "\(columnNamesOf: entity)"
        let existing = Set(try await rows(listing.once).compactMap { $0.first?.text })
        var columns = plan.changes.map { (name: $0.shadow, type: $0.to.type) }
        columns.append((MigrationPlan.rejectColumn, .string))
        var emptied: [String] = []
        for column in columns {
            let name = SQL.quote(column.name)
            if existing.contains(column.name) {
                guard dialect.dropsColumnsCheaply else {
                    emptied.append(name)
                    continue
                }
                let drop: SQLStatement = "ALTER TABLE \(table: entity) DROP COLUMN \(sql: name)"
                try await execute(drop.once)
            }
            let add: SQLStatement = "ALTER TABLE \(table: entity) ADD COLUMN \(sql: name) \(columnType: column.type)"
            try await execute(add.once)
        }
        guard !emptied.isEmpty else { return }
        let sets = emptied.map { "\($0) = NULL" }.joined(separator: ", ")
        let held = emptied.map { "\($0) IS NOT NULL" }.joined(separator: " OR ")
        let empty: SQLStatement = "UPDATE \(table: entity) SET \(sql: sets) WHERE \(sql: held)"
        try await execute(empty.once)
    }
}
