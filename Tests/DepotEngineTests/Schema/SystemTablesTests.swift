import DepotEngine
import Foundation
import GRDB
import Testing

@Suite("The engine's tables: versioned migrator")
struct SystemTablesTests {
    private func version(_ path: String) throws -> String {
        try sqlite3(path, "SELECT value FROM depot_meta WHERE key = 'system_version'")
    }

    @Test("a new store records the current version of the engine's tables")
    func newStore() async throws {
        let t = try await TemporaryStore()
        #expect(try version(t.path) == String(SystemTables.currentVersion))
        #expect(SystemTables.currentVersion >= 1)
    }

    @Test("a store of the releases before the migrator adopts it with its records")
    func adoptsOldStore() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        try await t.store.close()
        // The layout of those releases: no version key, no values columns, no consumers, no layouts, no job state.
        _ = try sqlite3(
            t.path,
            "DELETE FROM depot_meta WHERE key = 'system_version'; "
                + "ALTER TABLE depot_changes DROP COLUMN old; ALTER TABLE depot_changes DROP COLUMN new; "
                + "ALTER TABLE depot_changes DROP COLUMN layout; DROP TABLE depot_consumers; DROP TABLE depot_layouts; "
                + "ALTER TABLE depot_jobs DROP COLUMN state")
        #expect(try version(t.path) == "")
        let changes = try sqlite3(t.path, "SELECT count(*) FROM depot_changes")
        let again = try await TemporaryStore(folder: t.folder)
        #expect(try version(t.path) == String(SystemTables.currentVersion))
        #expect(try await again.store.reader.count(FetchDescriptor(entity: "Trip")) == 6)
        // Versions 2 and 3 added the values columns and kept the history.
        #expect(
            try sqlite3(
                t.path,
                "SELECT count(*) FROM pragma_table_info('depot_changes') "
                    + "WHERE name IN ('old', 'new', 'layout')") == "3")
        #expect(try sqlite3(t.path, "SELECT count(*) FROM depot_changes") == changes)
        #expect(try await again.store.reader.history().flatMap(\.changes).count == Int(changes))
    }

    @Test("version 4: a job's state in a column, taken from the records kept before, written with each record after")
    func jobState() async throws {
        let t = try await TemporaryStore()
        try await t.store.putJob(id: "a", state: "succeeded", record: Array(#"{"state":"succeeded"}"#.utf8))
        try await t.store.close()
        // A store of version 3: jobs without the column, their records as bytes (version 9 made them text).
        _ = try sqlite3(
            t.path,
            "DROP TABLE depot_jobs; CREATE TABLE depot_jobs(seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                + "id TEXT NOT NULL UNIQUE, record BLOB NOT NULL) STRICT; "
                + "UPDATE depot_meta SET value = 3 WHERE key = 'system_version'; "
                + #"INSERT INTO depot_jobs(id, record) VALUES ('a', CAST('{"state":"succeeded"}' AS BLOB)), "#
                + #"('b', CAST('{"id":"b","state":"running"}' AS BLOB)), ('c', CAST('not json' AS BLOB))"#)
        let again = try await TemporaryStore(folder: t.folder)
        #expect(try version(t.path) == String(SystemTables.currentVersion))
        #expect(
            try sqlite3(t.path, "SELECT group_concat(id || '=' || state, ' ') FROM depot_jobs")
                == "a=succeeded b=running c=queued")
        // The column keeps what the daemon writes, as the record changes.
        try await again.store.putJob(id: "a", state: "failed", record: Array(#"{"state":"failed"}"#.utf8))
        try await again.store.putJob(id: "d", state: "queued", record: Array("{}".utf8))
        #expect(
            try sqlite3(t.path, "SELECT group_concat(id || '=' || state, ' ') FROM depot_jobs")
                == "a=failed b=running c=queued d=queued")
        #expect(try await again.store.jobs().map(\.id) == ["a", "b", "c", "d"])
        // Version 9: the records kept as bytes read back as the same text.
        #expect(try await again.store.job("b") == Array(#"{"id":"b","state":"running"}"#.utf8))
        #expect(
            try sqlite3(t.path, "SELECT group_concat(typeof(record), ' ') FROM depot_jobs") == "text text text text")
    }

    /// Issue 35, item 4: GRDB's WAL setup set NORMAL on the writer after the
    /// store asked for FULL, so answered commits were not synced.
    @Test(
        "the writer runs with the store's durability: synchronous FULL by default, NORMAL when asked, after a reopen too"
    )
    func durability() async throws {
        let t = try await TemporaryStore()
        #expect(try await t.store.writerSynchronous() == 2)
        try await t.insertSample()
        #expect(try await t.store.writerSynchronous() == 2)
        try await t.store.close()
        let normal = try await TemporaryStore(folder: t.folder) { $0.durability = .normal }
        #expect(try await normal.store.writerSynchronous() == 1)
        try await normal.store.close()
        let again = try await TemporaryStore(folder: t.folder)
        #expect(try await again.store.writerSynchronous() == 2)
    }

    @Test("a store written by a newer release is refused, unchanged")
    func newerRefused() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        try await t.store.close()
        _ = try sqlite3(t.path, "UPDATE depot_meta SET value = 99 WHERE key = 'system_version'")
        let wider = try TemporaryStore.tripEntity(extraFields: [Field(name: "rating", type: .int, isOptional: true)])
        let error = await #expect(throws: DepotError.self) {
            _ = try await TemporaryStore(entities: [wider], folder: t.folder)
        }
        #expect(error?.code == .migrationRefused)
        #expect(error?.message.contains("store \"travel\" was written by a newer Depot") == true)
        #expect(error?.message.contains("version 99") == true)
        #expect(error?.message.contains("up to \(SystemTables.currentVersion)") == true)
        #expect(try version(t.path) == "99")
        // The entity's migration did not run either (8 fields and depot_token).
        #expect(try sqlite3(t.path, "SELECT count(*) FROM pragma_table_info('Trip')") == "9")
        #expect(try sqlite3(t.path, "SELECT count(*) FROM Trip") == "6")
    }

    @Test("steps run once each, in order, and a failing step leaves the file as it was")
    func stepsInOrderAndAtomic() throws {
        let queue = try DatabaseQueue()
        let create = SystemTables.Step(version: 2, summary: "a table") { db in
            try db.execute(sql: "CREATE TABLE depot_extra(n INTEGER); INSERT INTO depot_extra VALUES (1)")
        }
        let failing = SystemTables.Step(version: 3, summary: "fails") { db in
            try db.execute(sql: "INSERT INTO no_such_table VALUES (1)")
        }
        let v1 = SystemTables.steps[0]
        #expect(throws: DatabaseError.self) {
            try queue.write { try SystemTables.migrate($0, store: "s", steps: [v1, create, failing]) }
        }
        let afterFailure = try queue.read { db in
            (try SystemTables.version(db), try db.tableExists("depot_extra"), try db.tableExists("depot_meta"))
        }
        #expect(afterFailure == (0, false, false))
        try queue.write { try SystemTables.migrate($0, store: "s", steps: [v1, create]) }
        try queue.write { try SystemTables.migrate($0, store: "s", steps: [v1, create]) }
        let migrated = try queue.read { db in
            (try SystemTables.version(db), try Int.fetchOne(db, sql: "SELECT count(*) FROM depot_extra"))
        }
        #expect(migrated == (2, 1))
    }
}
