import ChildProcessSupport
import DepotEngine
import DepotWire
import Foundation
import GRDB
import Synchronization
import Testing

/// The online backup of an SQLite store (DESIGN §20, issue 53 item 1): a
/// copy at one token while saves go on, its manifest, its verification, and
/// nothing under a final name unless it is whole.
@Suite("Backups of an SQLite store")
struct BackupTests {
    static func trip(_ n: Int) -> [Value] {
        [.string("b\(n)"), .string("Trip \(n)"), "Oslo", "2026-01-01", nil, .double(Double(n)), false, nil]
    }

    /// The hex SHA-256 of a file, by coreutils' `sha256sum`.
    static func sha256sum(_ path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let out = Pipe()
        process.standardOutput = out
        try process.runClosingFiles()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitForExit()
        return String(text.prefix(while: { $0 != " " }))
    }

    @Test("a backup taken while saves commit holds exactly the saves up to its token, and its manifest says so")
    func consistentWhileSaving() async throws {
        let t = try await TemporaryStore()
        // A store large enough that the copy takes many steps.
        for chunk in 0..<20 {
            try await t.insertTrips((0..<1_000).map { Self.trip(chunk * 1_000 + $0) })
        }
        let store = t.store
        // Saves go on during the backup, each its own token.
        let saver = Task {
            var tokens: [(Int64, Int)] = []
            for n in 100_000..<100_400 {
                let outcome = try await store.save(author: "during", job: nil) {
                    var batch = RecordBatch(entity: "Trip", columns: TemporaryStore.tripColumns)
                    batch.append(Self.trip(n))
                    return try $0.write(batch, policy: .upsert)
                }
                tokens.append((outcome.token!.id, n))
                if Task.isCancelled { break }
            }
            return tokens
        }
        let steps = Mutex(0)
        let path = t.folder.appendingPathComponent("copy.sqlite").path
        let manifest = try await store.backup(to: path, depotVersion: "test", verify: true, pagesPerStep: 16) {
            done, total in
            steps.withLock { $0 += 1 }
            #expect(done <= total)
        }
        let tokens = try await saver.value
        #expect(steps.withLock { $0 } > 1)
        let token = try #require(manifest.token.flatMap(Int64.init))
        // The copy: the records of every save at or before its token, none after.
        let copy = try DatabaseQueue(path: path)
        let (ids, last, journal) = try await copy.read { db in
            (
                Set(try String.fetchAll(db, sql: "SELECT id FROM Trip")),
                try Int64.fetchOne(db, sql: "SELECT max(id) FROM depot_transactions"),
                try String.fetchOne(db, sql: "PRAGMA journal_mode")
            )
        }
        try copy.close()
        #expect(last == token)
        let expected = Set((0..<20_000).map { "b\($0)" } + tokens.filter { $0.0 <= token }.map { "b\($0.1)" })
        #expect(ids == expected)
        #expect(manifest.entities == ["Trip": expected.count])
        // One file, no journal beside it.
        #expect(journal == "delete")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        // The manifest beside it, as returned.
        #expect(manifest.file == "copy.sqlite")
        #expect(manifest.store == t.store.name)
        #expect(manifest.verified)
        #expect(manifest.systemVersion == SystemTables.currentVersion)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(manifest.bytes == (attributes[.size] as? NSNumber)?.int64Value)
        #expect(manifest.sha256 == (try Self.sha256sum(path)))
        let written = try JSONDecoder().decode(
            BackupManifest.self, from: Data(contentsOf: t.folder.appendingPathComponent("copy.json")))
        #expect(written == manifest)
    }

    @Test("a backup never overwrites a file, and a cancelled one leaves no file under either name")
    func noOverwriteNoPartial() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips((0..<5_000).map(Self.trip))
        let path = t.folder.appendingPathComponent("copy.sqlite").path
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
        let refused = await #expect(throws: DepotError.self) {
            _ = try await t.store.backup(to: path, depotVersion: "test")
        }
        #expect(refused?.code == .conflict)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
        // Cancelled after its first step: nothing under the final names, no partial file.
        let other = t.folder.appendingPathComponent("other.sqlite").path
        let (started, reached) = AsyncStream<Void>.makeStream()
        let gate = DispatchSemaphore(value: 0)
        let task = Task {
            try await t.store.backup(to: other, depotVersion: "test", pagesPerStep: 4) { done, _ in
                guard done == 4 * 4096 else { return }
                // The first step: held until the task is cancelled.
                reached.yield()
                gate.wait()
            }
        }
        for await _ in started { break }
        task.cancel()
        gate.signal()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(!FileManager.default.fileExists(atPath: other))
        #expect(!FileManager.default.fileExists(atPath: t.folder.appendingPathComponent("other.json").path))
        #expect(!FileManager.default.fileExists(atPath: other + ".partial"))
    }

    @Test("a job's backup run again after a kill: a leftover partial copy is replaced, a finished copy is kept")
    func runAgain() async throws {
        let t = try await TemporaryStore()
        try await t.insertTrips((0..<2_000).map(Self.trip))
        let path = t.folder.appendingPathComponent("j1.sqlite").path
        let manifestPath = Store.manifestPath(for: path)
        // Killed during the copy: its partial file is left, nothing under the final names.
        try Data("half a copy".utf8).write(to: URL(fileURLWithPath: path + ".partial"))
        let first = try await t.store.backup(to: path, depotVersion: "test", job: "j1")
        #expect(first.job == "j1")
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        #expect(first.sha256 == (try Self.sha256sum(path)))
        // Killed after the renames, before the job's end was recorded: the same job finds its copy.
        try await t.insertTrips([Self.trip(9_999)])
        let again = try await t.store.backup(to: path, depotVersion: "test", job: "j1")
        #expect(again == first)
        // Another job is refused the name.
        let other = await #expect(throws: DepotError.self) {
            _ = try await t.store.backup(to: path, depotVersion: "test", job: "j2")
        }
        #expect(other?.code == .conflict)
        // Killed between the manifest and the copy's rename: the job writes both again.
        try FileManager.default.removeItem(atPath: path)
        let redone = try await t.store.backup(to: path, depotVersion: "test", job: "j1")
        #expect(redone.entities == ["Trip": 2_001])
        #expect(redone.sha256 == (try Self.sha256sum(path)))
        let written = try JSONDecoder().decode(
            BackupManifest.self, from: Data(contentsOf: URL(fileURLWithPath: manifestPath)))
        #expect(written == redone)
    }
}
