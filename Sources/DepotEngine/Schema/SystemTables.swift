package import GRDB

/// The versioned migrator of the engine's own tables (`depot_*`): history,
/// jobs, checkpoints, imported-file hashes, the stored schema.
///
/// Each release that changes those tables appends a ``Step``; a store records
/// the last step applied (`depot_meta.system_version`) and, when it opens,
/// runs the steps it lacks, in order, inside the opening transaction, so a
/// failure leaves the file as it was. A store written by a newer release
/// (a version this one does not know) is refused, unchanged, rather than
/// written with assumptions that no longer hold.
///
/// Written here rather than with GRDB's `DatabaseMigrator`, which keeps its
/// own `grdb_migrations` table: DESIGN §9 gives the daemon's tables the
/// `depot_` prefix, and the version must commit with the entities' migration
/// in one transaction.
package enum SystemTables {
    /// One change of the engine's tables, from version `version - 1` to `version`.
    package struct Step: Sendable {
        package var version: Int
        package var summary: String
        package var apply: @Sendable (Database) throws -> Void

        package init(version: Int, summary: String, apply: @escaping @Sendable (Database) throws -> Void) {
            self.version = version
            self.summary = summary
            self.apply = apply
        }
    }

    /// Every step, oldest first; versions count up from 1 without gaps.
    package static let steps: [Step] = [
        // Version 1 is the layout of the releases before the migrator, so its
        // statements tolerate tables that already exist: those stores adopt
        // version 1 unchanged. `depot_transactions` uses AUTOINCREMENT so a
        // pruned token is never issued again.
        Step(version: 1, summary: "schema, meta, history, checkpoints, jobs, imported files") { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS depot_schema(
                        entity TEXT PRIMARY KEY, definition TEXT NOT NULL) STRICT;
                    CREATE TABLE IF NOT EXISTS depot_meta(key TEXT PRIMARY KEY, value ANY) STRICT;
                    CREATE TABLE IF NOT EXISTS depot_transactions(
                        id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL,
                        author TEXT NOT NULL, job TEXT) STRICT;
                    CREATE TABLE IF NOT EXISTS depot_changes(
                        id INTEGER PRIMARY KEY, txn INTEGER NOT NULL, entity TEXT NOT NULL,
                        identifier TEXT NOT NULL, kind TEXT NOT NULL, fields TEXT, tombstone TEXT) STRICT;
                    CREATE INDEX IF NOT EXISTS depot_changes_txn ON depot_changes(txn);
                    CREATE TABLE IF NOT EXISTS depot_checkpoints(
                        job TEXT PRIMARY KEY, data BLOB NOT NULL, updated TEXT NOT NULL) STRICT;
                    CREATE TABLE IF NOT EXISTS depot_jobs(
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, record BLOB NOT NULL) STRICT;
                    CREATE TABLE IF NOT EXISTS depot_imported_files(
                        hash TEXT PRIMARY KEY, path TEXT NOT NULL, job TEXT NOT NULL, imported TEXT NOT NULL) STRICT;
                    """)
        },
        // Version 2, the change feed (DESIGN §11): the values of changes,
        // JSON objects of the fields' old and new values for entities with
        // `history = "values"`; named consumers, each with the token it
        // acknowledged last.
        Step(version: 2, summary: "old and new values of changes, consumers") { db in
            try db.execute(
                sql: """
                    ALTER TABLE depot_changes ADD COLUMN old TEXT;
                    ALTER TABLE depot_changes ADD COLUMN new TEXT;
                    CREATE TABLE depot_consumers(
                        name TEXT PRIMARY KEY, token INTEGER NOT NULL, state TEXT NOT NULL,
                        created TEXT NOT NULL, acknowledged_at TEXT NOT NULL) STRICT;
                    """)
        },
        // Version 3, compact values: the import writes them as JSON arrays,
        // not objects, without the fields' names, which were about half of
        // their bytes. An update's arrays follow its `fields`; an insert's
        // or a delete's follow its `layout`, a list of the entity's fields
        // kept once in `depot_layouts` (an entity's fields change with its
        // configuration, so each change names the layout it was written
        // with). Reads turn them back into objects; objects written before
        // stay as they are.
        Step(version: 3, summary: "compact values: arrays and field layouts") { db in
            try db.execute(
                sql: """
                    ALTER TABLE depot_changes ADD COLUMN layout INTEGER;
                    CREATE TABLE depot_layouts(
                        id INTEGER PRIMARY KEY, entity TEXT NOT NULL, fields TEXT NOT NULL, UNIQUE(entity, fields)) STRICT;
                    """)
        },
        // Version 4, a job's state as a column of its own, as a PostgreSQL
        // store keeps it (issue #30): read without decoding the record. The
        // jobs already kept take the state their record names.
        Step(version: 4, summary: "a job's state in a column") { db in
            try db.execute(
                sql: """
                    ALTER TABLE depot_jobs ADD COLUMN state TEXT NOT NULL DEFAULT 'queued';
                    UPDATE depot_jobs SET state = coalesce(json_extract(CAST(record AS TEXT), '$.state'), 'queued')
                        WHERE json_valid(CAST(record AS TEXT));
                    """)
        },
        // Version 5, saves (DESIGN §16, issue #31): each record keeps the
        // token of its last change (`depot_token`, its ETag), set by every
        // write in the same statement as the record; the records stored
        // before take the last token issued, which is no earlier than their
        // last change (a save that read them before is checked against the
        // history, never passed unchecked). And the idempotency keys of
        // saves, each with a digest of its request and its answer.
        Step(version: 5, summary: "the token of each record's last change; idempotency keys of saves") { db in
            let last = try HistoryQuery.lastIssued(db)
            let entities = try String.fetchAll(db, sql: "SELECT entity FROM depot_schema ORDER BY entity")
            for entity in entities where try db.tableExists(entity) {
                let has =
                    try Bool.fetchOne(
                        db, sql: "SELECT count(*) > 0 FROM pragma_table_info(?) WHERE name = 'depot_token'",
                        arguments: [entity]) ?? false
                if has { continue }
                try db.execute(
                    sql: "ALTER TABLE \(SQL.quote(entity)) ADD COLUMN depot_token INTEGER DEFAULT \(last)")
            }
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS depot_idempotency(
                        key TEXT PRIMARY KEY, digest TEXT NOT NULL, answer TEXT NOT NULL, created TEXT NOT NULL) STRICT;
                    CREATE INDEX IF NOT EXISTS depot_idempotency_created ON depot_idempotency(created);
                    """)
        },
        // Processors (DESIGN §17): each a durable cursor over the records
        // that matched it when created, cut into batches handed out under leases.
        Step(version: 6, summary: "processors and their batches") { db in
            try db.execute(sql: SystemTables.processorTables)
        },
        // Entities created over the API (DESIGN §18), kept in the store;
        // the renames applied (`renamed_from`), each once.
        Step(version: 7, summary: "entities created over the API; renames applied") { db in
            try db.execute(sql: SystemTables.entityTable)
        },
        // Version 8: beside a change written in bulk, the rowid its record
        // had then (`rid`), so that a revert finds the record by it, in the
        // order the table keeps, instead of probing the identifier's index
        // once per change (at 5M records, 8.6 s of lookups against 1.1 s).
        // A hint only: checked against the identifier, which decides; null
        // where the writer did not know it (the changes written before, and
        // those written record by record).
        Step(version: 8, summary: "the rowid of a change's record, as a hint for reverts") { db in
            if try !db.columns(in: "depot_changes").contains(where: { $0.name == "rid" }) {
                try db.execute(sql: "ALTER TABLE depot_changes ADD COLUMN rid INTEGER")
            }
        },
        // Version 9, the jobs table as a PostgreSQL store's (issue 52): a
        // job's record as the text it is (the daemon's JSON), and the
        // columns of a claim by one of several hosts (never set on a store
        // only this host serves), so that the jobs' SQL is written once
        // (`Store/StoreBackend+Jobs.swift`). A STRICT table's column keeps
        // its type: the table is copied.
        Step(version: 9, summary: "a job's record as text; the columns of a host's claim") { db in
            try db.execute(
                sql: """
                    CREATE TABLE depot_jobs_text(
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, record TEXT NOT NULL,
                        state TEXT NOT NULL DEFAULT 'queued', owner TEXT, lease_until TEXT,
                        cancel_requested INTEGER NOT NULL DEFAULT 0) STRICT;
                    INSERT INTO depot_jobs_text(seq, id, record, state)
                        SELECT seq, id, CAST(record AS TEXT), state FROM depot_jobs ORDER BY seq;
                    DROP TABLE depot_jobs;
                    ALTER TABLE depot_jobs_text RENAME TO depot_jobs;
                    """)
        }
    ]

    /// The definitions of the entities created over the API (the same on
    /// PostgreSQL): each an ``EntityDefinition`` as JSON.
    package static let entityTable = """
        CREATE TABLE IF NOT EXISTS depot_entities(
            name TEXT PRIMARY KEY, definition TEXT NOT NULL, created TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS depot_renames(
            kind TEXT NOT NULL, entity TEXT NOT NULL, old TEXT NOT NULL, new TEXT NOT NULL, applied TEXT NOT NULL);
        """

    /// The processors' tables (the same on PostgreSQL, PostgresMigrator).
    package static let processorTables = """
        CREATE TABLE IF NOT EXISTS depot_processors(
            name TEXT PRIMARY KEY, entity TEXT NOT NULL, predicate TEXT, batch INTEGER NOT NULL, lease REAL NOT NULL,
            created TEXT NOT NULL, total INTEGER NOT NULL, done INTEGER NOT NULL, last_commit TEXT);
        CREATE TABLE IF NOT EXISTS depot_processor_batches(
            processor TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL, lease TEXT, until TEXT,
            count INTEGER NOT NULL, identifiers TEXT NOT NULL, PRIMARY KEY(processor, seq));
        CREATE INDEX IF NOT EXISTS depot_processor_batches_state ON depot_processor_batches(processor, state, seq);
        """

    /// The version this release writes.
    package static var currentVersion: Int { steps.last?.version ?? 0 }

    /// The system version a store holds: 0 for a new file, 1 for a store of
    /// the releases before the migrator (its tables exist, the key does not).
    package static func version(_ db: Database) throws -> Int {
        try recordedVersion(db) ?? (db.tableExists("depot_schema") ? 1 : 0)
    }

    private static func recordedVersion(_ db: Database) throws -> Int? {
        guard try db.tableExists("depot_meta") else { return nil }
        return try Int.fetchOne(db, sql: "SELECT value FROM depot_meta WHERE key = 'system_version'")
    }

    /// Brings a store's engine tables to the last of `steps`; runs inside the
    /// caller's transaction, so the steps and the recorded version commit
    /// together or not at all.
    ///
    /// - Throws: ``DepotError/Code/migrationRefused`` when the store holds a
    ///   version newer than the last step (written by a newer release).
    package static func migrate(_ db: Database, store: String, steps: [Step] = steps) throws {
        let target = steps.last?.version ?? 0
        let found = try version(db)
        if found > target {
            throw DepotError(
                .migrationRefused,
                "store \(JSONText.quoted(store)) was written by a newer Depot "
                    + "(its engine tables are at version \(found); this depotd knows versions up to \(target)); "
                    + "run the newer depotd, or restore a copy made before the upgrade")
        }
        for step in steps where step.version > found {
            try step.apply(db)
        }
        if try recordedVersion(db) != target {
            try db.execute(
                sql: "INSERT INTO depot_meta(key, value) VALUES ('system_version', ?) "
                    + "ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [target])
        }
    }
}
