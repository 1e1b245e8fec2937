import ChildProcessSupport
import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// A store on PostgreSQL is backed up by PostgreSQL; Depot names where a
/// point-in-time recovery of the cluster stops to bring the store back to a
/// token (DESIGN §20, issue 53 item 4): each history transaction keeps the
/// PostgreSQL transaction id that committed it.
@Suite("PostgreSQL: the recovery target of a token", .enabled(if: TestServer.available), .serialized)
struct RecoveryTargetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..")
        .standardized

    /// `scripts/pg-cluster ARGS`: what it printed; a failure throws what it said.
    @discardableResult
    static func cluster(_ args: [String], environment: [String: String] = [:]) throws -> String {
        let (status, said, complaint) = try ChildProcess.run(
            root.appendingPathComponent("scripts/pg-cluster"), args,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        guard status == 0 else {
            throw DepotError(.database, "scripts/pg-cluster \(args.joined(separator: " ")): \(complaint)")
        }
        return said.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A save of new Trip records `ids`: its token.
    static func save(_ store: PostgresStore, _ ids: [String]) async throws -> Int64 {
        let batch = try store.prepare(SaveContractTests.rows(ids), BatchOptions(policy: .upsert))
        let outcome = try await store.withSave(author: "test", job: nil) { try await $0.write(batch) }
        return try #require(outcome.token).id
    }

    @Test(
        "a cluster recovered to the xid Depot names for a token holds the store exactly at that token: the saves before it, none after"
    )
    func pointInTimeRecovery() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("depot-pitr-\(UUID().uuidString)")
        let (primary, recovered, archive) = (
            folder.appendingPathComponent("primary").path, folder.appendingPathComponent("recovered").path,
            folder.appendingPathComponent("archive").path
        )
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        // The folders are the server's user's (as root, postgres).
        chmod(folder.path, 0o755)
        defer {
            try? Self.cluster(["stop", recovered])
            try? Self.cluster(["stop", primary])
            try? FileManager.default.removeItem(at: folder)
        }
        let url = try Self.cluster(["start", primary], environment: ["PG_ARCHIVE": archive])
        let configuration = PostgresStoreConfiguration(
            name: "travel", location: try PostgresLocation(url: url, schema: "pitr"),
            entities: [try WriteContractTests.trip()])
        let store = try await PostgresStore.open(configuration)
        let a = try await Self.save(store, ["a1", "a2"])
        try Self.cluster(["basebackup", primary, recovered])
        let b = try await Self.save(store, ["b1"])
        let c = try await Self.save(store, ["c1", "c2"])
        let (targetA, targetB, targetC) = (
            try await store.recoveryTarget(token: a), try await store.recoveryTarget(token: b),
            try await store.recoveryTarget(token: c)
        )
        // One commit each: each is the last token of its own transaction.
        #expect(targetA.lastToken == a && targetB.lastToken == b && targetC.lastToken == c)
        #expect(targetA.xid < targetB.xid && targetB.xid < targetC.xid)
        let committed = try await store.read { connection in
            try await PostgresSQL.textRows(
                connection, "SELECT txid_status(\(targetB.xid))", logger: store.logger)
        }
        #expect(PostgresSQL.scalar(committed) == "committed")
        // The WAL through c's commit goes to the archive: a segment switch,
        // then a clean stop, whose archiver archives what is complete.
        try await store.read { connection in
            try await PostgresSQL.execute(connection, "SELECT pg_switch_wal()::text", logger: store.logger)
        }
        await store.close()
        try Self.cluster(["stop", primary])

        let recoveredURL = try Self.cluster(["recover", recovered, archive, String(targetB.xid)])
        var back = configuration
        back.location = try PostgresLocation(url: recoveredURL, schema: "pitr")
        let restored = try await PostgresStore.open(back)
        let records = try await restored.records("Trip").map { $0[0].text ?? "" }
        // The history ends at b (the tokens issued later are past a gap:
        // PostgreSQL logs a sequence ahead of what it gave, so a recovered
        // one resumes further on).
        let last = try await restored.read { connection in
            PostgresSQL.scalar(
                try await PostgresSQL.textRows(
                    connection, "SELECT max(id)::text FROM \(restored.table("depot_transactions"))",
                    logger: restored.logger)
            ).flatMap { Int64($0) }
        }
        await restored.close()
        #expect(records == ["a1", "a2", "b1"])
        #expect(last == b)
    }

    @Test(
        "a token never issued is refused, and one written before the store kept transaction ids (system version 4) says so; after the upgrade, new saves have theirs"
    )
    func oldTransactions() async throws {
        let backend = try await PostgresBackend(entities: [WriteContractTests.trip()])
        var reopened: PostgresBackend?
        do {
            let old = try await Self.save(backend.store, ["a"])
            await #expect(throws: DepotError.self) { try await backend.store.recoveryTarget(token: old + 100) }
            // Back to version 4's table: no xid.
            for sql in [
                "ALTER TABLE \(backend.store.table("depot_transactions")) DROP COLUMN xid",
                "UPDATE \(backend.store.table("depot_meta")) SET value = '4' WHERE key = 'system_version'"
            ] {
                try await backend.store.read { try await PostgresSQL.execute($0, sql, logger: backend.store.logger) }
            }
            reopened = try await backend.reopen(entities: [WriteContractTests.trip()]) as? PostgresBackend
            let store = try #require(reopened).store
            do {
                _ = try await store.recoveryTarget(token: old)
                Issue.record("a transaction without an xid was given a recovery target")
            } catch let error as DepotError {
                #expect(error.code == .invalidArgument && error.message.contains("system version 5"), "\(error)")
            }
            let new = try await Self.save(store, ["b"])
            let target = try await store.recoveryTarget(token: new)
            #expect(target.lastToken == new && target.xid > 0)
        } catch {
            await (reopened ?? backend).close()
            throw error
        }
        await (reopened ?? backend).close()
    }
}
