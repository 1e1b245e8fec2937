import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// Opening a store again with another configuration, on both backends: the
/// same migrations, and the same refusals with the same reasons.
@Suite("Migration contract: SQLite and PostgreSQL")
struct MigrationContractTests {
    static func trip(
        extra: [Field] = [], indexes: [[String]] = [["destination"]], budget: FieldType = .double,
        notesOptional: Bool = true
    ) throws -> EntitySchema {
        try EntitySchema(
            name: "Trip",
            fields: [
                Field(name: "id", type: .string), Field(name: "name", type: .string),
                Field(name: "destination", type: .string, isOptional: true), Field(name: "budget", type: budget),
                Field(name: "notes", type: .string, isOptional: notesOptional)
            ] + extra,
            identifier: ["id"], indexes: indexes, history: .values)
    }

    static func batch(_ rows: [[Value]], columns: [String] = ["id", "name", "destination", "budget", "notes"])
        -> RecordBatch
    {
        var batch = RecordBatch(entity: "Trip", columns: columns)
        for row in rows { batch.append(row) }
        return batch
    }

    @Test("a new optional field and other indexes migrate; the records stay and take the new field")
    func migrates() async throws {
        var results: [String: [[Value]]] = [:]
        for name in Backends.names {
            var backend = try await Backends.open(name, entities: [Self.trip()])
            do {
                _ = try await backend.write(Self.batch([["T1", "a", "Rome", 1.0, nil], ["T2", "b", nil, 2.0, "n"]]))
                let wider = try Self.trip(
                    extra: [Field(name: "rating", type: .int, isOptional: true)],
                    indexes: [["budget"], ["destination", "budget"]])
                backend = try await backend.reopen(entities: [wider])
                _ = try await backend.write(Self.batch([["T1", 5]], columns: ["id", "rating"]))
                results[name] = try await backend.records("Trip")
                #expect(results[name] == [["T1", "a", "Rome", 1.0, nil, 5], ["T2", "b", nil, 2.0, "n", nil]], "\(name)")
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
        if let pg = results["postgresql"] { #expect(pg == results["sqlite"]) }
    }

    @Test("a new store has its entities' indexes at once; a migration adds and drops them")
    func indexes() async throws {
        for name in Backends.names {
            var backend = try await Backends.open(
                name, entities: [try Self.trip(indexes: [["destination"], ["budget", "name"]])])
            do {
                #expect(try await backend.indexes("Trip") == [["budget", "name"], ["destination"]], "\(name)")
                backend = try await backend.reopen(entities: [try Self.trip(indexes: [["notes"], ["budget", "name"]])])
                #expect(try await backend.indexes("Trip") == [["budget", "name"], ["notes"]], "\(name)")
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
    }

    @Test("an index whose name is longer than PostgreSQL keeps (63 bytes): the store opens again, and again without it")
    func longIndexName() async throws {
        let long = [
            Field(name: "a_rather_long_field_name_for_an_index", type: .string, isOptional: true),
            Field(name: "another_rather_long_field_name", type: .int, isOptional: true)
        ]
        let entity = try Self.trip(extra: long, indexes: [long.map(\.name), ["destination"]])
        for name in Backends.names {
            var backend = try await Backends.open(name, entities: [entity])
            do {
                _ = try await backend.write(Self.batch([["T1", "a", "Rome", 1.0, nil]]))
                backend = try await backend.reopen(entities: [entity])
                backend = try await backend.reopen(entities: [try Self.trip(extra: long)])
                #expect(try await backend.records("Trip").count == 1, "\(name)")
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
    }

    @Test("changes that cannot migrate are refused, every reason listed, with the same words on both backends")
    func refuses() async throws {
        var messages: [String: String] = [:]
        for name in Backends.names {
            let backend = try await Backends.open(name, entities: [Self.trip()])
            do {
                _ = try await backend.write(Self.batch([["T1", "a", "Rome", 1.0, nil]]))
                let changed = try Self.trip(
                    extra: [Field(name: "rating", type: .int)], budget: .string, notesOptional: false)
                do {
                    _ = try await backend.reopen(entities: [changed])
                    Issue.record("\(name): the migration was not refused")
                } catch let error as DepotError {
                    #expect(error.code == .migrationRefused, "\(name)")
                    messages[name] = error.message
                }
            } catch {
                await backend.close()
                throw error
            }
            await backend.close()
        }
        let sqlite = try #require(messages["sqlite"])
        #expect(sqlite.contains(#"field "budget": the type changed from double to string"#))
        #expect(sqlite.contains(#"field "rating": a new field must be optional"#))
        #expect(sqlite.contains(#"field "notes": it was optional and 1 records hold null in it"#))
        if let pg = messages["postgresql"] { #expect(pg == sqlite) }
    }

    @Test(
        "a PostgreSQL store of system version 1 (changes keyed by a serial id) or 2 (a change a row) migrates when it opens: history as before, new saves after it",
        .enabled(if: TestServer.available), arguments: [1, 2])
    func olderSystemVersions(_ version: Int) async throws {
        let trip = try EntitySchema(
            name: "Trip",
            fields: [Field(name: "id", type: .string), Field(name: "name", type: .string, isOptional: true)],
            identifier: ["id"], history: .fields)
        let backend = try await PostgresBackend(entities: [trip])
        var reopened: PostgresBackend?
        do {
            var batch = RecordBatch(entity: "Trip", columns: ["id", "name"])
            batch.append(["T1", "a"])
            batch.append(["T2", "b"])
            _ = try await backend.write(batch, policy: .upsert, supersede: false)
            var update = RecordBatch(entity: "Trip", columns: ["id", "name"])
            update.append(["T2", "c"])
            update.append(["T3", "d"])
            _ = try await backend.write(update, policy: .upsert, supersede: false)
            let before = try await backend.history()
            // Back to version 2's table: a change a row (a run of new records
            // split into its changes, which take the places it spans).
            let changes = backend.store.table("depot_changes")
            let two = [
                "INSERT INTO \(changes)(id, txn, entity, identifier, kind, fields, tombstone, old, new, layout) "
                    + "SELECT c.id + k - 1, c.txn, c.entity, split_part(c.identifier, E'\\n', k), c.kind, c.fields, "
                    + "c.tombstone, c.old, split_part(c.new, E'\\n', k), c.layout FROM \(changes) c, "
                    + "generate_series(2, c.span) k WHERE c.span > 1",
                "UPDATE \(changes) SET identifier = split_part(identifier, E'\\n', 1), new = split_part(new, E'\\n', 1) "
                    + "WHERE span > 1",
                "ALTER TABLE \(changes) DROP COLUMN span",
                "UPDATE \(backend.store.table("depot_meta")) SET value = '2' WHERE key = 'system_version'"
            ]
            #expect(
                try await backend.store.read {
                    try await PostgresSQL.textRows(
                        $0, "SELECT max(span)::text FROM \(changes)", logger: backend.store.logger)
                }.first?.first == "2", "the first save's two new records share a row")
            // Back to version 1's tables, as that release made them: ids from
            // a sequence across the whole history, no layouts.
            let one = [
                "ALTER TABLE \(changes) DROP CONSTRAINT depot_changes_pkey, DROP COLUMN layout",
                "CREATE SEQUENCE \(backend.store.table("depot_changes_id_seq")) OWNED BY \(changes).id",
                "UPDATE \(changes) c SET id = n.id FROM (SELECT txn, id AS place, "
                    + "row_number() OVER (ORDER BY txn, id) AS id FROM \(changes)) n WHERE c.txn = n.txn AND c.id = n.place",
                "SELECT setval('\(backend.schema).depot_changes_id_seq', (SELECT max(id) FROM \(changes)))",
                "ALTER TABLE \(changes) ALTER COLUMN id SET DEFAULT nextval('\(backend.schema).depot_changes_id_seq'), "
                    + "ADD PRIMARY KEY (id)",
                "CREATE INDEX depot_changes_txn ON \(changes)(txn)",
                "DROP TABLE \(backend.store.table("depot_layouts"))",
                "UPDATE \(backend.store.table("depot_meta")) SET value = '1' WHERE key = 'system_version'"
            ]
            for sql in two + (version == 1 ? one : []) {
                try await backend.store.read { try await PostgresSQL.execute($0, sql, logger: backend.store.logger) }
            }
            reopened = try await backend.reopen(entities: [trip]) as? PostgresBackend
            let store = try #require(reopened).store
            #expect(try await reopened!.history() == before)
            let meta = try await store.read {
                try await PostgresSQL.textRows(
                    $0, "SELECT value FROM \(store.table("depot_meta")) WHERE key = 'system_version'",
                    logger: store.logger)
            }
            #expect(PostgresSQL.scalar(meta) == String(PostgresMigrator.systemVersion))
            let indexes = try await store.read {
                try await PostgresSQL.textRows(
                    $0,
                    "SELECT indexname::text FROM pg_indexes WHERE schemaname = "
                        + "\(PostgresSQL.literal(backend.schema)) AND tablename = 'depot_changes' ORDER BY 1",
                    logger: store.logger)
            }
            #expect(indexes.map { $0[0] } == ["depot_changes_pkey"])
            var later = RecordBatch(entity: "Trip", columns: ["id", "name"])
            later.append(["T1", "e"])
            later.append(["T4", "f"])
            _ = try await reopened!.write(later, policy: .upsert, supersede: false)
            let after = try await reopened!.history()
            #expect(Array(after.prefix(before.count)) == before)
            #expect(after.count == before.count + 1)
            #expect(after.last?.changes.map { "\($0.kind) \($0.identifier)" } == [#"update "T1""#, #"insert "T4""#])
        } catch {
            await (reopened ?? backend).close()
            throw error
        }
        await (reopened ?? backend).close()
    }

    @Test(
        "a PostgreSQL store written by a newer release is refused, as an SQLite store is, and left as it was",
        .enabled(if: TestServer.available))
    func newerSystemVersion() async throws {
        let trip = try Self.trip()
        let backend = try await PostgresBackend(entities: [trip])
        let meta = backend.store.table("depot_meta")
        let newer = PostgresMigrator.systemVersion + 1
        try await backend.store.read {
            try await PostgresSQL.execute(
                $0, "UPDATE \(meta) SET value = '\(newer)' WHERE key = 'system_version'",
                logger: backend.store.logger)
        }
        await backend.store.close()
        let location = backend.store.configuration.location
        do {
            let store = try await PostgresStore.open(
                PostgresStoreConfiguration(name: "travel", location: location, entities: [trip]))
            await store.close()
            Issue.record("a store of system version \(newer) opened")
        } catch let error as DepotError {
            #expect(error.code == .migrationRefused)
            #expect(
                error.message == "store \"travel\" was written by a newer Depot (its engine tables are at version "
                    + "\(newer); this depotd knows versions up to \(PostgresMigrator.systemVersion)); run the newer depotd, "
                    + "or restore a copy made before the upgrade")
        }
        await backend.close()
    }
}

@Suite("PostgreSQL: an import job's keys")
struct SourceKeysTests {
    @Test(
        "a key the job never gave is new for certain; one it gave, or gave twice in a batch, may be stored; few false alarms"
    )
    func filter() {
        let keys = SourceKeys()
        #expect(keys.check(["a", "b"]) == [false, false])
        #expect(keys.check(["a", "c", "c", "b"]) == [true, false, true, true])
        let first = (0..<200_000).map { "first \($0)" }
        #expect(keys.check(first).filter { $0 }.count < 1_000)
        #expect(keys.check(first).allSatisfy { $0 })
        // Other keys after 200,000: a false alarm about once in a million at this size.
        let others = (0..<200_000).map { "other \($0)" }
        #expect(keys.check(others).filter { $0 }.count < 1_000)
        #expect(!keys.conflicted)
        keys.markConflicted()
        #expect(keys.conflicted)
    }
}
