import CDepotSQLite
import DepotEngine
import Foundation
import Testing

@Suite("Schema and migration")
struct SchemaTests {
    @Test("SQLite's memory statistics were turned off before SQLite initialised")
    func memstatusOff() async throws {
        _ = try await TemporaryStore()
        // SQLITE_OK (0); SQLITE_MISUSE (21) would mean the constructor came too late.
        #expect(depot_sqlite_disable_memstatus() == 0)
    }

    @Test("a new store is a WAL SQLite file with one STRICT table per entity")
    func createsTables() async throws {
        let t = try await TemporaryStore()
        #expect(try sqlite3(t.path, "PRAGMA journal_mode") == "wal")
        let ddl = try sqlite3(t.path, "SELECT sql FROM sqlite_master WHERE name = 'Trip'")
        #expect(ddl.contains("\"id\" TEXT NOT NULL UNIQUE"))
        #expect(ddl.contains("\"budget\" REAL"))
        #expect(ddl.contains("STRICT"))
        let tables = try sqlite3(t.path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        for table in ["depot_changes", "depot_checkpoints", "depot_meta", "depot_schema", "depot_transactions"] {
            #expect(tables.contains(table))
        }
        let indexes = try sqlite3(t.path, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Trip'")
        #expect(indexes.contains("depot_idx_Trip(destination)"))
        #expect(indexes.contains("depot_idx_Trip(startDate)"))
    }

    @Test("field and entity names with spaces and quotes work end to end")
    func oddNames() async throws {
        let entity = try EntitySchema(
            name: "Org \"Units\"",
            fields: [
                Field(name: "Organization Name", type: .string), Field(name: "head count", type: .int),
                Field(name: "it's", type: .string, isOptional: true)
            ],
            identifier: ["Organization Name"], indexes: [["head count"]])
        let t = try await TemporaryStore(entities: [entity])
        var batch = RecordBatch(entity: entity.name, columns: ["Organization Name", "head count", "it's"])
        batch.append(["Acme", 12, "yes"])
        batch.append(["Globex", 40, nil])
        let frozen = batch
        _ = try await t.store.save(author: "t") { try $0.write(frozen, policy: .upsert) }
        let ids = try await t.store.reader.identifiers(
            FetchDescriptor(entity: entity.name, where: "`head count` > 20 AND `it's` == nil"))
        #expect(ids.map(\.json) == ["\"Globex\""])
        #expect(try sqlite3(t.path, "SELECT count(*) FROM \"Org \"\"Units\"\"\"") == "2")
    }

    @Test("compound identifiers are unique together and shown as JSON arrays")
    func compoundIdentifier() async throws {
        let entity = try EntitySchema(
            name: "Population",
            fields: [
                Field(name: "region", type: .int), Field(name: "year", type: .int),
                Field(name: "sex", type: .string), Field(name: "age", type: .string),
                Field(name: "count", type: .int)
            ],
            identifier: ["region", "year", "sex", "age"])
        let t = try await TemporaryStore(entities: [entity])
        var batch = RecordBatch(entity: "Population", columns: ["region", "year", "sex", "age", "count"])
        batch.append([4, 1950, "Male", "0-4", 100])
        batch.append([4, 1950, "Female", "0-4", 90])
        batch.append([4, 1950, "Male", "0-4", 101])
        let frozen = batch
        let outcome = try await t.store.save(author: "t") { try $0.write(frozen, policy: .upsert) }
        #expect(outcome.value.inserted == 2)
        #expect(outcome.value.updated == 1)
        let ids = try await t.store.reader.identifiers(FetchDescriptor(entity: "Population", sort: [.init("sex")]))
        #expect(ids.map(\.json) == ["[4,1950,\"Female\",\"0-4\"]", "[4,1950,\"Male\",\"0-4\"]"])
    }

    @Test("invalid entities are refused with every problem named")
    func invalidSchema() throws {
        let error = #expect(throws: DepotError.self) {
            try EntitySchema(
                name: "depot_x",
                fields: [
                    Field(name: "id", type: .string, isOptional: true),
                    Field(name: "Name", type: .string), Field(name: "name", type: .string)
                ],
                identifier: ["id"], indexes: [["nmae"]])
        }
        #expect(error?.code == .invalidSchema)
        let message = error?.message ?? ""
        #expect(message.contains("reserved"))
        #expect(message.contains("differ only by case"))
        #expect(message.contains("identifier field \"id\" is optional"))
        #expect(message.contains("unknown field \"nmae\""))
        #expect(throws: DepotError.self) { try Field(name: "x", declaration: "integer") }
        #expect(try Field(name: "x", declaration: "date?") == Field(name: "x", type: .date, isOptional: true))
    }

    @Test("an added optional field migrates in place and keeps the records")
    func addOptionalField() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        try await t.store.close()
        let wider = try TemporaryStore.tripEntity(
            extraFields: [Field(name: "rating", type: .int, isOptional: true)],
            indexes: [["rating"]])
        let reopened = try await TemporaryStore(entities: [wider], folder: t.folder)
        let all = try await reopened.store.reader.fetch(FetchDescriptor(entity: "Trip", fields: ["id", "rating"]))
        #expect(all.count == TemporaryStore.sampleTrips.count)
        #expect(all.rows.allSatisfy { $0[1] == .null })
        let indexes = try sqlite3(t.path, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Trip'")
        #expect(indexes.contains("depot_idx_Trip(rating)"))
        #expect(!indexes.contains("depot_idx_Trip(destination)"))
    }

    @Test("incompatible changes are refused, naming entity and field, and change nothing")
    func refusals() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        try await t.store.close()
        func reopen(_ fields: [Field], identifier: [String] = ["id"]) async -> DepotError? {
            do {
                let entity = try EntitySchema(name: "Trip", fields: fields, identifier: identifier)
                _ = try await TemporaryStore(entities: [entity], folder: t.folder)
                return nil
            } catch let error as DepotError { return error } catch { return nil }
        }
        let base = try TemporaryStore.tripEntity().fields
        // A type change.
        var changed = base
        changed[5] = Field(name: "budget", type: .string)
        let typeError = await reopen(changed)
        #expect(typeError?.code == .migrationRefused)
        #expect(
            typeError?.message.contains("entity \"Trip\", field \"budget\": the type changed from double to string")
                == true)
        // A new required field.
        let required = await reopen(base + [Field(name: "rating", type: .int)])
        #expect(required?.message.contains("field \"rating\": a new field must be optional") == true)
        // A new identifier on a field the store does not hold (one it
        // holds migrates: MigrateContractTests).
        let identifier = await reopen(base + [Field(name: "rating", type: .int)], identifier: ["rating"])
        #expect(
            identifier?.message.contains(
                #"the identifier changed from ["id"] to ["rating"], and field "rating" of the new one is not stored with its type"#
            )
                == true, "\(identifier?.message ?? "")")
        // A removed field.
        let removed = await reopen(Array(base.dropLast()))
        #expect(removed?.message.contains("field \"notes\" is in the store but no longer declared") == true)
        // Optional to required while nulls exist.
        var tightened = base
        tightened[2] = Field(name: "destination", type: .string)
        let nulls = await reopen(tightened)
        #expect(nulls?.message.contains("1 records hold null") == true)
        // Nothing changed: the original configuration still opens with the data.
        let again = try await TemporaryStore(folder: t.folder)
        #expect(try await again.store.reader.count(FetchDescriptor(entity: "Trip")) == 6)
        let columns = try sqlite3(t.path, "SELECT count(*) FROM pragma_table_info('Trip')")
        #expect(columns == "9")  // 8 fields and depot_token
    }

    @Test("an optional field with no nulls may become required")
    func tightenWithoutNulls() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips([["a", "A", "Oslo", "2025-01-01", nil, 1.0, false, nil]])
        try await t.store.close()
        var fields = try TemporaryStore.tripEntity().fields
        fields[2] = Field(name: "destination", type: .string)
        let entity = try EntitySchema(name: "Trip", fields: fields, identifier: ["id"])
        let reopened = try await TemporaryStore(entities: [entity], folder: t.folder)
        #expect(try reopened.store.reader.entity("Trip").fields[2].isOptional == false)
    }

    @Test("a table Depot did not create is not taken over")
    func foreignTable() async throws {
        let folder = try TemporaryStore.makeFolder()
        // The store is refused, so no TemporaryStore removes the folder.
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try sqlite3(folder.appendingPathComponent("test.sqlite").path, "CREATE TABLE Trip(x)")
        await #expect(throws: DepotError.self) { _ = try await TemporaryStore(folder: folder) }
    }

    @Test("a store that cannot be opened says where and why")
    func unopenable() async throws {
        let config = StoreConfiguration(
            name: "x", path: "/nonexistent/dir/x.sqlite",
            entities: [try TemporaryStore.tripEntity()])
        let error = await #expect(throws: DepotError.self) { _ = try await Store.open(config) }
        #expect(error?.code == .database)
        #expect(error?.message.contains("/nonexistent/dir/x.sqlite") == true)
    }
}
