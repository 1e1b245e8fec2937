import DepotEngine
import DepotWire
import Foundation
import GRDB
import Testing

/// A backup put back (DESIGN §20, issue 53 item 3): checked against its
/// manifest and by SQLite before it takes the store's name; a damaged one
/// named, nothing written.
@Suite("Restores of an SQLite store's backup")
struct RestoreTests {
    /// A store of `count` trips and its backup in the store's folder.
    static func backedUp(_ count: Int) async throws -> (TemporaryStore, String, BackupManifest) {
        let t = try await TemporaryStore()
        try await t.insertTrips((0..<count).map(BackupTests.trip))
        let path = t.folder.appendingPathComponent("backup.sqlite").path
        let manifest = try await t.store.backup(to: path, depotVersion: "test")
        return (t, path, manifest)
    }

    @Test("a backup restored over a store's file gives its records back; the file replaced needs --force")
    func restoresOverTheFile() async throws {
        let (t, backup, manifest) = try await Self.backedUp(1_000)
        try await t.insertTrips((1_000..<1_500).map(BackupTests.trip))
        try await t.store.close()
        // What the store left beside its file belongs to it, not to the backup.
        try Data("stale".utf8).write(to: URL(fileURLWithPath: t.path + "-wal"))
        let refused = await #expect(throws: DepotError.self) {
            try await BackupRestore.restore(from: backup, into: t.path, store: "travel")
        }
        #expect(refused?.code == .conflict)
        let restored = try await BackupRestore.restore(
            from: backup, into: t.path, store: "travel", force: true, verify: true)
        #expect(restored == manifest)
        #expect(!FileManager.default.fileExists(atPath: t.path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: t.path + ".partial"))
        let again = try await TemporaryStore(folder: t.folder)
        #expect(try await again.store.reader.count(FetchDescriptor(entity: "Trip")) == 1_000)
        #expect(try await again.store.reader.latestToken()?.description == manifest.token)
    }

    @Test("a flipped byte, a copy cut short, a manifest of another store: each named, nothing written")
    func damaged() async throws {
        let (t, backup, manifest) = try await Self.backedUp(2_000)
        let into = t.folder.appendingPathComponent("restored.sqlite").path
        func refused(_ what: String) async -> String {
            let error = await #expect(throws: DepotError.self, "\(what)") {
                try await BackupRestore.restore(from: backup, into: into, store: "travel")
            }
            #expect(!FileManager.default.fileExists(atPath: into), "\(what): a file under the final name")
            #expect(!FileManager.default.fileExists(atPath: into + ".partial"), "\(what): a partial file left")
            return error?.message ?? ""
        }
        let original = try Data(contentsOf: URL(fileURLWithPath: backup))
        // One byte flipped in the middle of the copy.
        var flipped = original
        flipped[flipped.count / 2] ^= 0x01
        try flipped.write(to: URL(fileURLWithPath: backup))
        #expect(await refused("flipped").contains("is damaged: its SHA-256 is"))
        // Cut short.
        try original.prefix(original.count - 4096).write(to: URL(fileURLWithPath: backup))
        #expect(await refused("cut short").contains("is cut short or grew: \(original.count - 4096) bytes"))
        // Whole again, but its manifest names another store.
        try original.write(to: URL(fileURLWithPath: backup))
        var other = manifest
        other.store = "shop"
        try JSONEncoder().encode(other).write(to: URL(fileURLWithPath: Store.manifestPath(for: backup)))
        #expect(await refused("another store").contains("is a backup of store \"shop\", not of \"travel\""))
        // No manifest at all.
        try FileManager.default.removeItem(atPath: Store.manifestPath(for: backup))
        #expect(await refused("no manifest").contains("has no manifest beside it"))
    }

    @Test("a copy whose bytes match its manifest but not its counts does not restore")
    func countsChecked() async throws {
        let (t, backup, manifest) = try await Self.backedUp(100)
        var wrong = manifest
        wrong.entities = ["Trip": 101]
        try JSONEncoder().encode(wrong).write(to: URL(fileURLWithPath: Store.manifestPath(for: backup)))
        let into = t.folder.appendingPathComponent("restored.sqlite").path
        let error = await #expect(throws: DepotError.self) {
            try await BackupRestore.restore(from: backup, into: into)
        }
        #expect(
            error?.message.contains("holds 100 records of Trip where the store held 101") == true,
            "\(error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: into))
    }
}
