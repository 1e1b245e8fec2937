public import DepotEngine
import Foundation
import PostgresNIO
import Synchronization

/// Creates a PostgreSQL store's schema and tables, or migrates them to the
/// configured entities, with the same rules and messages as an SQLite
/// store's migration: a new optional field is added, indexes follow the
/// configuration, and a change that cannot migrate in place is refused
/// with every reason listed.
enum PostgresMigrator {
    /// What `depot_schema` keeps of an entity (the same JSON as SQLite's).
    typealias Definition = MigrationRules.Definition

    /// The system version this release writes in a PostgreSQL store.
    /// 2: `depot_changes` keyed by (txn, id), the ids given by each save
    /// (1, 2, … in its order), no index of its own on txn; values as
    /// compact arrays under a `layout` of `depot_layouts`, as SQLite's.
    /// 3: a row of `depot_changes` may hold a run of new records of one
    /// save (`span` changes from its id on, their identifiers and values
    /// one a line), stored uncompressed or by lz4, not pglz.
    /// 4: each record's `depot_token`, the token of its last change (the
    /// records stored before take the last token issued), and the
    /// idempotency keys of saves (DESIGN §16).
    /// 5: each history transaction's PostgreSQL transaction id (`xid`, as
    /// `txid_current()` gives it, with its epoch), which a point-in-time
    /// recovery to a token names (DESIGN §20; null for the transactions
    /// written before).
    static let systemVersion = 5

    /// The column of a record's token: new records take the token of the
    /// save's history transaction (PostgresSaveContext.tokenExpression).
    static let tokenColumn = "depot_token bigint DEFAULT \(PostgresSaveContext.tokenExpression)"

    /// How `depot_changes` stores the long texts of runs of new records
    /// (a run's identifiers and values, hundreds of kilobytes): compressed
    /// by lz4 where the server has it, else uncompressed. PostgreSQL's
    /// default, pglz, took three times as long as the whole COPY of the
    /// history of an import of a million records (BENCHMARKS.md, "PostgreSQL").
    static func changesStorage(_ connection: PostgresConnection, store: PostgresStore) async throws -> String {
        let lz4 =
            try await PostgresSQL.textRows(
                connection,
                "SELECT 1::text FROM pg_settings "
                    + "WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)", logger: store.logger
            ).isEmpty == false
        let how = lz4 ? "SET COMPRESSION lz4" : "SET STORAGE EXTERNAL"
        return "ALTER TABLE \(store.table("depot_changes")) ALTER COLUMN identifier \(how), ALTER COLUMN new \(how)"
    }

    static func migrate(_ connection: PostgresConnection, store: PostgresStore) async throws {
        try await migrateSystem(connection, store: store)
        let created = try await createdEntities(connection, store: store)
        try EntityDefinition.checkNames(configured: store.configuration.entities, created: created, store: store.name)
        let plans = try await migrate(connection, store: store, entities: store.configuration.entities + created)
        store.box.set(
            StoreSchema(
                name: store.name, entities: store.configuration.entities + created,
                createdByAPI: Set(created.map(\.name)), migrations: plans))
    }

    /// The layout of each entity's fields, in their order, that its compact
    /// values are written under (as an SQLite store's): made if new, and
    /// kept in ``PostgresStore/layouts``.
    static func layouts(_ connection: PostgresConnection, store: PostgresStore, entities: [EntitySchema]) async throws {
        for entity in entities {
            var layout = PostgresBindings()
            layout.append(entity.name)
            layout.append(JSONText.array(entity.fields.map(\.name)))
            try await PostgresSQL.execute(
                connection,
                "INSERT INTO \(store.table("depot_layouts"))(entity, fields) VALUES ($1, $2) "
                    + "ON CONFLICT (entity, fields) DO NOTHING", layout, logger: store.logger)
            let id = PostgresSQL.scalar(
                try await PostgresSQL.textRows(
                    connection,
                    "SELECT id::text FROM "
                        + "\(store.table("depot_layouts")) WHERE entity = $1 AND fields = $2", layout,
                    logger: store.logger)
            ).flatMap { Int64($0) }
            store.layouts.withLock { $0[entity.name] = id }
        }
    }

    /// Applies the renames `entities` ask for (``RenamePlan``, as an SQLite
    /// store does), in the opening transaction, before the entities are checked.
    static func applyRenames(_ connection: PostgresConnection, store: PostgresStore, entities: [EntitySchema])
        async throws
    {
        guard entities.contains(where: { $0.renamedFrom != nil || !$0.fieldsRenamedFrom.isEmpty }) else { return }
        let logger = store.logger
        func run(_ sql: String, _ values: [String?]) async throws {
            var binds = PostgresBindings()
            for v in values { binds.append(v) }
            try await PostgresSQL.execute(connection, sql, binds, logger: logger)
        }
        func rows(_ sql: String, _ values: [String?] = []) async throws -> [[String?]] {
            var binds = PostgresBindings()
            for v in values { binds.append(v) }
            return try await PostgresSQL.textRows(connection, sql, binds, logger: logger)
        }
        let definitions = try await rows("SELECT entity, definition FROM \(store.table("depot_schema"))")
            .compactMap { row -> (String, String)? in
                guard let name = row[0], let text = row[1] else { return nil }
                return (name, text)
            }
        let plan = try RenamePlan.make(entities, definitions: definitions, store: store.name)
        let now = Timestamp.now()
        for r in plan.entities {
            try await run("ALTER TABLE \(store.table(r.old)) RENAME TO \(PostgresSQL.quote(r.new))", [])
            for table in ["depot_schema", "depot_layouts", "depot_changes", "depot_processors"] {
                try await run("UPDATE \(store.table(table)) SET entity = $1 WHERE entity = $2", [r.new, r.old])
            }
            try await run(
                "INSERT INTO \(store.table("depot_renames"))(kind, entity, old, new, applied) "
                    + "VALUES ('entity', $1, $2, $3, $4)", [r.new, r.old, r.new, now])
        }
        for r in plan.fields {
            try await run(
                "ALTER TABLE \(store.table(r.entity)) RENAME COLUMN \(PostgresSQL.quote(r.old)) TO "
                    + "\(PostgresSQL.quote(r.new))", [])
            if let text = PostgresSQL.scalar(
                try await rows("SELECT definition FROM \(store.table("depot_schema")) WHERE entity = $1", [r.entity])),
                let renamed = try RenamePlan.renaming(definition: text, r.old, r.new)
            {
                try await run(
                    "UPDATE \(store.table("depot_schema")) SET definition = $1 WHERE entity = $2", [renamed, r.entity])
            }
            // The history under the new name (as an SQLite store's).
            for row in try await rows(
                "SELECT id::text, fields FROM \(store.table("depot_layouts")) WHERE entity = $1", [r.entity])
            {
                guard let id = row[0], let names = row[1] else { continue }
                try await run(
                    "UPDATE \(store.table("depot_layouts")) SET fields = $1 WHERE id = $2::bigint",
                    [RenamePlan.renamingName(names, r.old, r.new), id])
            }
            let name = JSONText.quoted(r.old)
            for row in try await rows(
                "SELECT txn::text, id::text, fields, old, new, tombstone FROM \(store.table("depot_changes")) "
                    + "WHERE entity = $1 AND (strpos(fields, $2) > 0 OR strpos(old, $3) > 0 OR strpos(new, $3) > 0 "
                    + "OR strpos(tombstone, $3) > 0)", [r.entity, name, name + ":"])
            {
                try await run(
                    "UPDATE \(store.table("depot_changes")) SET fields = $1, old = $2, new = $3, tombstone = $4 "
                        + "WHERE txn = $5::bigint AND id = $6::bigint",
                    [
                        row[2].map { RenamePlan.renamingName($0, r.old, r.new) },
                        row[3].map { RenamePlan.renamingKey($0, r.old, r.new) },
                        row[4].map { RenamePlan.renamingKey($0, r.old, r.new) },
                        row[5].map { RenamePlan.renamingKey($0, r.old, r.new) }, row[0], row[1]
                    ])
            }
            try await run(
                "INSERT INTO \(store.table("depot_renames"))(kind, entity, old, new, applied) "
                    + "VALUES ('field', $1, $2, $3, $4)", [r.entity, r.old, r.new, now])
        }
    }

    /// The entities created over the API that the store keeps (DESIGN §18).
    static func createdEntities(_ connection: PostgresConnection, store: PostgresStore) async throws -> [EntitySchema] {
        try await PostgresSQL.textRows(
            connection, "SELECT definition FROM \(store.table("depot_entities")) ORDER BY created, name",
            logger: store.logger
        )
        .compactMap { $0.first.flatMap { $0 } }
        .map { try EntityDefinition.stored($0, store: store.name) }
    }

    /// The engine's own tables, brought up to date.
    static func migrateSystem(_ connection: PostgresConnection, store: PostgresStore) async throws {
        let location = store.configuration.location
        let logger = store.logger
        func run(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws {
            try await PostgresSQL.execute(connection, sql, binds, logger: logger)
        }
        func table(_ name: String) -> String { store.table(name) }
        // Hosts opening the same store at once migrate one after the other.
        try await PostgresSQL.lock(connection, "depot:" + location.schema, logger: logger)
        try await run("CREATE SCHEMA IF NOT EXISTS \(PostgresSQL.quote(location.schema))")
        try await run("CREATE TABLE IF NOT EXISTS \(table("depot_meta"))(key text PRIMARY KEY, value text)")
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_schema"))(entity text PRIMARY KEY, definition text NOT NULL)")
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_transactions"))(id bigserial PRIMARY KEY, "
                + "timestamp text NOT NULL, author text NOT NULL, job text, xid bigint DEFAULT txid_current())")
        // Whether the store was there before this open (its system version
        // is read below, once depot_changes has been made if it was not).
        let older =
            try await PostgresSQL.textRows(
                connection,
                "SELECT 1::text FROM information_schema.tables "
                    + "WHERE table_schema = \(PostgresSQL.literal(location.schema)) AND table_name = 'depot_changes'",
                logger: logger
            )
            .isEmpty == false
        // A row is a change of a save's history transaction, or a run of
        // `span` new records (changes id, id + 1, …): their identifiers and
        // their values one a line, as PostgresSaveContext writes them. The
        // place in the transaction (id) is given by the save, so the only
        // index is the key, which also gives the order of the changes.
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_changes"))(id bigint NOT NULL, "
                + "txn bigint NOT NULL, entity text NOT NULL, identifier text NOT NULL, kind text NOT NULL, "
                + "fields text, tombstone text, old text, new text, layout bigint, span integer, PRIMARY KEY (txn, id))"
        )
        // The field names of compact values (an insert's, a delete's).
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_layouts"))(id bigserial PRIMARY KEY, "
                + "entity text NOT NULL, fields text NOT NULL, UNIQUE (entity, fields))")
        // How its long texts are stored: set when the table is made or
        // migrated, not at each open (it locks the table).
        var storage = !older
        if older {
            let version = PostgresSQL.scalar(
                try await PostgresSQL.textRows(
                    connection,
                    "SELECT value FROM \(table("depot_meta")) WHERE key = 'system_version'", logger: logger))
            if version == "1" {
                // Version 1's changes: a serial id for key and an index on txn.
                try await run("ALTER TABLE \(table("depot_changes")) ADD COLUMN IF NOT EXISTS layout bigint")
                try await run(
                    "ALTER TABLE \(table("depot_changes")) DROP CONSTRAINT depot_changes_pkey, "
                        + "ADD PRIMARY KEY (txn, id)")
                try await run("ALTER TABLE \(table("depot_changes")) ALTER COLUMN id DROP DEFAULT")
                try await run("DROP INDEX IF EXISTS \(store.prefix)depot_changes_txn")
            }
            if let version, let number = Int(version), number > systemVersion {
                throw DepotError(
                    .migrationRefused,
                    "store \(JSONText.quoted(store.name)) was written by a newer Depot "
                        + "(its engine tables are at version \(number); this depotd knows versions up to \(systemVersion)); "
                        + "run the newer depotd, or restore a copy made before the upgrade")
            }
            if version == "1" || version == "2" {
                try await run("ALTER TABLE \(table("depot_changes")) ADD COLUMN IF NOT EXISTS span integer")
                storage = true
            }
            if let version, let number = Int(version), number < 4 {
                // Each stored entity's records take the last token issued
                // (added as a constant: no rewrite of the table), and new
                // ones the save's.
                let last = try await store.lastIssued(connection)
                let stored = try await PostgresSQL.textRows(
                    connection,
                    "SELECT s.entity FROM \(table("depot_schema")) s JOIN information_schema.tables i "
                        + "ON i.table_schema = \(PostgresSQL.literal(location.schema)) AND i.table_name = s.entity "
                        + "ORDER BY s.entity", logger: logger)
                for name in stored.compactMap({ $0[0] }) {
                    try await run(
                        "ALTER TABLE \(table(name)) ADD COLUMN IF NOT EXISTS depot_token bigint DEFAULT \(last)")
                    try await run(
                        "ALTER TABLE \(table(name)) ALTER COLUMN depot_token SET DEFAULT \(PostgresSaveContext.tokenExpression)"
                    )
                }
            }
            if let version, let number = Int(version), number < 5 {
                // The transactions before keep no id (a volatile default
                // on ADD COLUMN would give each the migration's own).
                try await run("ALTER TABLE \(table("depot_transactions")) ADD COLUMN IF NOT EXISTS xid bigint")
                try await run("ALTER TABLE \(table("depot_transactions")) ALTER COLUMN xid SET DEFAULT txid_current()")
            }
            if let version, let number = Int(version), number < systemVersion {
                try await run(
                    "UPDATE \(table("depot_meta")) SET value = '\(systemVersion)' WHERE key = 'system_version'")
            }
        }
        // The idempotency keys of saves: each with a digest of its request and its answer.
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_idempotency"))(key text PRIMARY KEY, digest text NOT NULL, "
                + "answer text NOT NULL, created timestamptz NOT NULL)")
        try await run(
            "CREATE INDEX IF NOT EXISTS depot_idempotency_created ON \(table("depot_idempotency"))(created)")
        // Processors (DESIGN §17), as an SQLite store keeps them (SystemTables step 6).
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_processors"))(name text COLLATE \"C\" PRIMARY KEY, "
                + "entity text NOT NULL, predicate text, batch bigint NOT NULL, lease double precision NOT NULL, "
                + "created text COLLATE \"C\" NOT NULL, total bigint NOT NULL, done bigint NOT NULL, "
                + "last_commit text COLLATE \"C\")")
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_processor_batches"))(processor text COLLATE \"C\" NOT NULL, "
                + "seq bigint NOT NULL, state text NOT NULL, lease text, until text COLLATE \"C\", "
                + "count bigint NOT NULL, identifiers text NOT NULL, PRIMARY KEY(processor, seq))")
        try await run(
            "CREATE INDEX IF NOT EXISTS depot_processor_batches_state ON "
                + "\(table("depot_processor_batches"))(processor, state, seq)")
        // Entities created over the API (DESIGN §18), as an SQLite store keeps them.
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_entities"))(name text COLLATE \"C\" PRIMARY KEY, "
                + "definition text NOT NULL, created text COLLATE \"C\" NOT NULL)")
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_renames"))(kind text NOT NULL, entity text NOT NULL, "
                + "old text NOT NULL, new text NOT NULL, applied text NOT NULL)")
        if storage { try await run(try await changesStorage(connection, store: store)) }
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_checkpoints"))(job text PRIMARY KEY, "
                + "data bytea NOT NULL, updated text NOT NULL)")
        // Jobs, claimed by one host at a time under a lease (PostgresJobs).
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_jobs"))(seq bigserial, id text PRIMARY KEY, "
                + "record text NOT NULL, state text NOT NULL, owner text, lease_until timestamptz)")
        // A cancel asked through a host that does not run the job; the
        // running host's lease renewal hears it.
        try await run(
            "ALTER TABLE \(table("depot_jobs")) ADD COLUMN IF NOT EXISTS cancel_requested boolean NOT NULL "
                + "DEFAULT false")
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_imported_files"))(hash text PRIMARY KEY, "
                + "path text NOT NULL, job text NOT NULL, imported text NOT NULL)")
        try await run(
            "CREATE TABLE IF NOT EXISTS \(table("depot_consumers"))(name text PRIMARY KEY, token bigint NOT NULL, "
                + "state text NOT NULL, created text NOT NULL, acknowledged_at text NOT NULL)")
        try await run(
            "CREATE INDEX IF NOT EXISTS depot_jobs_claimable ON \(table("depot_jobs"))(seq) "
                + "WHERE state IN ('queued', 'running')")
        try await run(try await foldFunction(connection, store: store))
        var versionBinds = PostgresBindings()
        versionBinds.append(String(systemVersion))
        try await run(
            "INSERT INTO \(table("depot_meta"))(key, value) VALUES ('system_version', $1) "
                + "ON CONFLICT (key) DO NOTHING", versionBinds)

    }

    /// Creates `entities`' tables or migrates them (the rules and messages of
    /// an SQLite store), in the caller's transaction.
    /// - Returns: the migrations to run (their entities are served as the
    ///   store holds them until each one's switch).
    @discardableResult
    static func migrate(_ connection: PostgresConnection, store: PostgresStore, entities: [EntitySchema]) async throws
        -> [MigrationPlan]
    {
        let location = store.configuration.location
        let logger = store.logger
        func run(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws {
            try await PostgresSQL.execute(connection, sql, binds, logger: logger)
        }
        func table(_ name: String) -> String { store.table(name) }
        try await applyRenames(connection, store: store, entities: entities)
        var problems: [String] = []
        var work: [() async throws -> Void] = []
        var plans: [MigrationPlan] = []
        var served: [EntitySchema] = []
        for configured in entities {
            var entity = configured
            defer { served.append(entity) }
            var binds = PostgresBindings()
            binds.append(entity.name)
            let stored = PostgresSQL.scalar(
                try await PostgresSQL.textRows(
                    connection,
                    "SELECT definition FROM \(table("depot_schema")) WHERE entity = $1", binds, logger: logger))
            guard let stored else {
                var exists = PostgresBindings()
                exists.append(location.schema)
                exists.append(entity.name)
                let found = try await PostgresSQL.textRows(
                    connection,
                    "SELECT 1::text FROM information_schema.tables "
                        + "WHERE table_schema = $1 AND table_name = $2", exists, logger: logger)
                if !found.isEmpty {
                    problems.append(MigrationRules.foreignTable(entity))
                    continue
                }
                work.append {
                    try await create(connection, store, entity)
                    try await syncIndexes(connection, store, entity)
                }
                continue
            }
            guard let old = try? JSONDecoder().decode(Definition.self, from: Data(stored.utf8)) else {
                problems.append(
                    "entity \(JSONText.quoted(entity.name)): the stored schema is unreadable; "
                        + "the store may be damaged")
                continue
            }
            var nulls: [String: Int] = [:]
            for name in MigrationRules.fieldsBecomingRequired(entity, stored: old) {
                let rows = try await PostgresSQL.textRows(
                    connection,
                    "SELECT count(*)::text FROM "
                        + "\(table(entity.name)) WHERE \(PostgresSQL.quote(name)) IS NULL", logger: logger)
                nulls[name] = PostgresSQL.scalar(rows).flatMap { Int($0) } ?? 0
            }
            let outcome = MigrationRules.check(entity, stored: old, nulls: nulls)
            problems += outcome.problems
            if let plan = MigrationRules.plan(configured, stored: old, outcome, problems: &problems) {
                entity = plan.serving
                plans.append(plan)
            }
            for field in outcome.added {
                work.append { [entity] in
                    try await run(
                        "ALTER TABLE \(table(entity.name)) ADD COLUMN "
                            + "\(PostgresSQL.quote(field.name)) \(PostgresSQL.type(field.type))")
                }
            }
            work.append { [entity] in try await syncIndexes(connection, store, entity) }
        }
        problems += MigrationPlan.problems(plans, served: served, store: store.name, dialect: .postgresql)
        guard problems.isEmpty else {
            throw DepotError(
                .migrationRefused,
                "store \(JSONText.quoted(store.name)) cannot open with this "
                    + "configuration: " + problems.joined(separator: "; "))
        }
        for step in work { try await step() }
        try await layouts(connection, store: store, entities: served)
        for entity in served { try await keep(connection, store: store, entity) }
        return plans
    }

    /// Keeps `entity`'s definition in `depot_schema`: what the next open checks against.
    static func keep(_ connection: PostgresConnection, store: PostgresStore, _ entity: EntitySchema) async throws {
        var binds = PostgresBindings()
        binds.append(entity.name)
        binds.append(try Definition(entity).json)
        try await PostgresSQL.execute(
            connection,
            "INSERT INTO \(store.table("depot_schema"))(entity, definition) VALUES ($1, $2) "
                + "ON CONFLICT (entity) DO UPDATE SET definition = excluded.definition", binds, logger: store.logger)
    }

    /// `depot_fold(text, flags)`, the `[c]`/`[d]` folding of an SQLite
    /// store's connections (TextFolding) in SQL: diacritics are the
    /// nonspacing marks of the canonical decomposition, the very set Swift's
    /// Unicode tables give (written into the function as a character class);
    /// case is ICU's full lowercase mapping where the server has ICU, the
    /// database's `lower()` otherwise.
    static func foldFunction(_ connection: PostgresConnection, store: PostgresStore) async throws -> String {
        let icu = try await PostgresSQL.textRows(
            connection,
            "SELECT 1::text FROM pg_collation "
                + "WHERE collname = 'und-x-icu' LIMIT 1", logger: store.logger)
        let lower = icu.isEmpty ? "lower(d)" : "lower(d COLLATE \"und-x-icu\")"
        return "CREATE OR REPLACE FUNCTION \(store.prefix)depot_fold(t text, flags integer) RETURNS text "
            + "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $depot$ "
            + "SELECT CASE WHEN flags & 1 <> 0 THEN \(lower) ELSE d END FROM (SELECT CASE "
            + "WHEN flags & 2 <> 0 AND t ~ '[^\\x01-\\x7f]' THEN regexp_replace(normalize(t, NFD), '\(nonspacingMarks)', '', 'g') "
            + "ELSE t END AS d) AS folded $depot$"
    }

    /// Every nonspacing mark (general category Mn) as one regular
    /// expression character class, in ranges.
    static let nonspacingMarks: String = {
        func escape(_ v: UInt32) -> String {
            v <= 0xFFFF ? "\\u" + String(format: "%04x", v) : "\\U" + String(format: "%08x", v)
        }
        var out = "["
        var start: UInt32?
        var last: UInt32 = 0
        for v in UInt32(0x300)...0x10FFFF {
            let isMark = Unicode.Scalar(v).map { $0.properties.generalCategory == .nonspacingMark } ?? false
            if isMark {
                if start == nil { start = v }
                last = v
            } else if let s = start {
                out += s == last ? escape(s) : escape(s) + "-" + escape(last)
                start = nil
            }
        }
        return out + "]"
    }()

    private static func create(_ connection: PostgresConnection, _ store: PostgresStore, _ entity: EntitySchema)
        async throws
    {
        var columns = entity.fields.map { field in
            "\(PostgresSQL.quote(field.name)) \(PostgresSQL.type(field.type))"
                + (field.isOptional && !entity.identifier.contains(field.name) ? "" : " NOT NULL")
        }
        columns.append(tokenColumn)
        columns.append("PRIMARY KEY (" + entity.identifier.map(PostgresSQL.quote).joined(separator: ", ") + ")")
        try await PostgresSQL.execute(
            connection, "CREATE TABLE \(store.table(entity.name)) (\(columns.joined(separator: ", ")))",
            logger: store.logger)
    }

    /// The name of an index, as an SQLite store names it; past the 63
    /// bytes PostgreSQL keeps of a name (it would cut it, and the next open
    /// would not find it), `depot_idx_` and a hash of that name.
    static func indexName(_ entity: EntitySchema, _ fields: [String]) -> String {
        let name = "depot_idx_\(entity.name)(\(fields.joined(separator: ",")))"
        guard name.utf8.count > 63 else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: stable from run to run, unlike Hasher
        for byte in name.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return "depot_idx_" + String(hash, radix: 16)
    }

    static func syncIndexes(
        _ connection: PostgresConnection, _ store: PostgresStore,
        _ entity: EntitySchema
    ) async throws {
        let wanted = Dictionary(entity.indexes.map { (indexName(entity, $0), $0) }, uniquingKeysWith: { a, _ in a })
        var binds = PostgresBindings()
        binds.append(store.configuration.location.schema)
        binds.append(entity.name)
        let existing = try await PostgresSQL.textRows(
            connection,
            "SELECT indexname::text FROM pg_indexes "
                + "WHERE schemaname = $1 AND tablename = $2 AND indexname LIKE 'depot\\_idx\\_%'", binds,
            logger: store.logger
        )
        .compactMap { $0.first ?? nil }
        for name in existing where wanted[name] == nil {
            try await PostgresSQL.execute(
                connection, "DROP INDEX \(store.prefix)\(PostgresSQL.quote(name))", logger: store.logger)
        }
        for (name, fields) in wanted where !existing.contains(name) {
            try await PostgresSQL.execute(
                connection,
                "CREATE INDEX \(PostgresSQL.quote(name)) ON \(store.table(entity.name))("
                    + fields.map { PostgresSQL.quote($0) + PostgresSQL.byteOrder(entity, $0) }.joined(separator: ", ")
                    + ")",
                logger: store.logger)
        }
    }
}

extension PostgresStore {
    /// The payload of a `NOTIFY` on the store's channel that says its
    /// entities changed (one created or dropped over the API).
    static let entitiesChanged = "entities"

    /// Reads the entities created over the API again (another host changed them).
    nonisolated func reloadEntities() async throws {
        try await schemaLock.run { try await reloadEntitiesAlone() }
    }

    private nonisolated func reloadEntitiesAlone() async throws {
        let created = try await read { connection in try await PostgresMigrator.createdEntities(connection, store: self)
        }
        // Layouts of entities new to this host.
        try await transaction { connection in
            try await PostgresMigrator.layouts(connection, store: self, entities: created)
        }
        box.update { now in
            StoreSchema(
                name: name, entities: now.configured + created, createdByAPI: Set(created.map(\.name)),
                migrations: Array(now.migrations.values))
        }
    }

    /// Brings the store to the configuration's `entities` while it runs
    /// (a reload): as opening it would, in one transaction.
    public nonisolated func reconfigure(entities: [EntitySchema]) async throws {
        do {
            try await schemaLock.run { try await reconfigureAlone(entities: entities) }
        } catch {
            throw translate(error)
        }
    }

    private nonisolated func reconfigureAlone(entities: [EntitySchema]) async throws {
        do {
            try await transaction { connection in
                try await PostgresSQL.lock(
                    connection, "depot:" + self.configuration.location.schema, logger: self.logger)
                let created = try await PostgresMigrator.createdEntities(connection, store: self)
                try EntityDefinition.checkNames(configured: entities, created: created, store: self.name)
                let plans = try await PostgresMigrator.migrate(connection, store: self, entities: entities + created)
                self.box.set(
                    StoreSchema(
                        name: self.name, entities: entities + created, createdByAPI: Set(created.map(\.name)),
                        migrations: plans))
            }
        } catch {
            throw translate(error)
        }
    }

    /// Creates entity `entity` over the API, or changes the one created so
    /// (DESIGN §18); false when it is as given already.
    public nonisolated func putEntity(_ entity: EntitySchema) async throws -> Bool {
        do {
            return try await schemaLock.run { try await put(entity) }
        } catch {
            throw EntityDefinition.refusal(translate(error), entity: entity.name, store: name)
        }
    }

    private nonisolated func put(_ entity: EntitySchema) async throws -> Bool {
        let changed = try await transaction { connection in
            try await PostgresSQL.lock(connection, "depot:" + self.configuration.location.schema, logger: self.logger)
            try EntityDefinition.checkPut(entity, in: self.schema)
            let text = EntityDefinition(entity).json
            var binds = PostgresBindings()
            binds.append(entity.name)
            let stored = PostgresSQL.scalar(
                try await PostgresSQL.textRows(
                    connection, "SELECT definition FROM \(self.table("depot_entities")) WHERE name = $1", binds,
                    logger: self.logger))
            if stored == text { return nil as MigrationPlan?? }
            let plans = try await PostgresMigrator.migrate(connection, store: self, entities: [entity])
            var row = PostgresBindings()
            row.append(entity.name)
            row.append(text)
            row.append(Timestamp.now())
            try await PostgresSQL.execute(
                connection,
                "INSERT INTO \(self.table("depot_entities"))(name, definition, created) VALUES ($1, $2, $3) "
                    + "ON CONFLICT (name) DO UPDATE SET definition = excluded.definition", row, logger: self.logger)
            try await self.announceEntities(connection)
            return plans.first as MigrationPlan??
        }
        guard let changed else { return false }
        box.update { $0.replacing(entity, migrating: changed) }
        return true
    }

    /// Drops entity `name`, created over the API and holding no record.
    public nonisolated func dropEntity(_ name: String) async throws {
        try await schemaLock.run { try await drop(name) }
    }

    private nonisolated func drop(_ name: String) async throws {
        try await transaction { connection in
            try await PostgresSQL.lock(connection, "depot:" + self.configuration.location.schema, logger: self.logger)
            let entity = try EntityDefinition.checkDrop(name, in: self.schema)
            let count =
                PostgresSQL.scalar(
                    try await PostgresSQL.textRows(
                        connection, "SELECT count(*)::text FROM \(self.table(name))", logger: self.logger)
                ).flatMap { Int($0) } ?? 0
            try EntityDefinition.checkEmpty(entity, count: count)
            var binds = PostgresBindings()
            binds.append(name)
            try await PostgresSQL.execute(connection, "DROP TABLE \(self.table(name))", logger: self.logger)
            try await PostgresSQL.execute(
                connection, "DELETE FROM \(self.table("depot_schema")) WHERE entity = $1", binds, logger: self.logger)
            try await PostgresSQL.execute(
                connection, "DELETE FROM \(self.table("depot_entities")) WHERE name = $1", binds, logger: self.logger)
            try await self.announceEntities(connection)
        }
        box.update { $0.removing(name) }
    }

    /// Tells every host of the store, when the transaction commits, that its entities changed.
    private nonisolated func announceEntities(_ connection: PostgresConnection) async throws {
        var binds = PostgresBindings()
        binds.append(channel)
        binds.append(PostgresStore.entitiesChanged)
        try await PostgresSQL.execute(connection, "SELECT pg_notify($1, $2)", binds, logger: logger)
    }
}
