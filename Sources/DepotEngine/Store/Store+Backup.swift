import Crypto
public import DepotWire
import Foundation
import GRDB
import Synchronization

/// The online backup of an SQLite store (DESIGN §20): a consistent copy at
/// one token while reads, saves and jobs go on.
///
/// The copy is SQLite's online backup from one read transaction: the token,
/// the counts and every page come from the same snapshot, and saves commit
/// meanwhile (to the WAL, which is not folded into the file past the
/// snapshot until the copy ends). It is written under a temporary name
/// (`NAME.partial`), made a single file (rollback journal, not WAL), synced,
/// hashed, optionally verified, and only then renamed, with its manifest
/// after it: a copy under its final name is whole.
///
/// ```swift
/// let manifest = try await store.backup(to: "/var/lib/depot/backups/travel.sqlite", depotVersion: "0.9.0")
/// print(manifest.token ?? "-", manifest.entities)
/// ```
extension Store {
    /// How many pages each step of the copy takes (4 MiB at 4 KiB a page):
    /// a step between reports of progress and checks of cancellation.
    public static let backupPagesPerStep: Int32 = 1024

    /// Writes a consistent copy of the store to `path`, and its manifest
    /// to `path` with the extension `.json`.
    ///
    /// - Parameters:
    ///   - job: the job writing the copy, named in its manifest: a run of
    ///     the same job again (after a restart) finds its copy done, or
    ///     writes it anew.
    ///   - verify: opens the copy read-only after it is written, runs
    ///     `PRAGMA integrity_check` and compares its counts with the
    ///     snapshot's, before the rename.
    ///   - pagesPerStep: pages copied between two reports of progress (and
    ///     checks of cancellation).
    ///   - progress: bytes copied and the total (pages of the store's page
    ///     size), after each step.
    /// - Throws: ``DepotError/Code/conflict`` when `path` or its manifest
    ///   exists (a backup never overwrites one); ``DepotError/Code/io`` or
    ///   ``DepotError/Code/diskFull`` when the copy cannot be written (no
    ///   file is left under either name); ``DepotError/Code/database`` when
    ///   the verification fails; `CancellationError` when the task is cancelled.
    public func backup(
        to path: String, depotVersion: String, job: String? = nil, verify: Bool = false,
        pagesPerStep: Int32 = backupPagesPerStep,
        progress: @escaping @Sendable (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) async throws -> BackupManifest {
        let final = URL(fileURLWithPath: path)
        let manifestPath = Self.manifestPath(for: path)
        if let done = try Self.earlierRun(of: job, path: path, manifestPath: manifestPath) { return done }
        for existing in [path, manifestPath] where FileManager.default.fileExists(atPath: existing) {
            throw DepotError(.conflict, "\(existing) exists: a backup never overwrites a file; choose another name")
        }
        let partial = path + ".partial"
        // Left by a backup that was killed: never under the final name.
        for leftover in [partial, partial + "-journal"] { unlink(leftover) }
        let cancelled = CancelFlag()
        do {
            let snapshot = try await withTaskCancellationHandler {
                try await copy(to: partial, pagesPerStep: pagesPerStep, cancelled: cancelled, progress: progress)
            } onCancel: {
                cancelled.set()
            }
            try Task.checkCancellation()
            let (bytes, sha256) = try Self.syncAndHash(partial)
            if verify { try await Self.verify(partial, counts: snapshot.counts) }
            let manifest = BackupManifest(
                store: name, file: final.lastPathComponent, token: snapshot.token.map(String.init),
                time: snapshot.time, depotVersion: depotVersion, systemVersion: SystemTables.currentVersion,
                entities: snapshot.counts, bytes: bytes, sha256: sha256, verified: verify, job: job)
            // The manifest first: a copy under its final name always has its
            // manifest, and a manifest of this job without its copy (a kill
            // between the two renames) is redone by the job's next run.
            try Self.writeManifest(manifest, to: manifestPath)
            guard rename(partial, path) == 0 else {
                let code = errno
                unlink(manifestPath)
                throw DepotError.io("cannot move the backup to \(path)", errno: code)
            }
            try Self.syncFolder(of: path)
            return manifest
        } catch {
            unlink(partial)
            unlink(partial + "-journal")
            if let error = error as? DatabaseError { throw Store.translate(error, store: name) }
            throw error
        }
    }

    /// What an earlier run of job `job` left at `path` (the daemon was
    /// stopped or killed before it recorded the job's end): its manifest when
    /// the copy is in place, whole by its size; nil when there is none, or
    /// when only its manifest is (then removed, to be written again).
    private static func earlierRun(of job: String?, path: String, manifestPath: String) throws -> BackupManifest? {
        guard let job, let data = FileManager.default.contents(atPath: manifestPath),
            let manifest = try? JSONDecoder().decode(BackupManifest.self, from: data), manifest.job == job
        else { return nil }
        let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
        if size?.int64Value == manifest.bytes { return manifest }
        unlink(manifestPath)
        return nil
    }

    /// What the copy's snapshot held.
    private struct Snapshot: Sendable {
        var token: Int64?
        var time: String
        var counts: [String: Int]
    }

    /// Copies every page of one read transaction to a new file at `partial`.
    private func copy(
        to partial: String, pagesPerStep: Int32, cancelled: CancelFlag, progress: @escaping @Sendable (Int, Int) -> Void
    ) async throws -> Snapshot {
        var configuration = Configuration()
        configuration.journalMode = .default
        let destination = try DatabaseQueue(path: partial, configuration: configuration)
        defer { try? destination.close() }
        let entities = schema.entities.map(\.name)
        let snapshot = try await pool.read { db in
            // One snapshot: the token, the counts and the pages.
            let token = try Int64.fetchOne(db, sql: "SELECT max(id) FROM depot_transactions")
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            let time = Timestamp.now()
            var counts: [String: Int] = [:]
            for entity in entities {
                counts[entity] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SQL.quote(entity))") ?? 0
            }
            try destination.writeWithoutTransaction { target in
                try db.backup(to: target, pagesPerStep: pagesPerStep) { step in
                    if cancelled.isSet { throw CancellationError() }
                    progress(step.completedPageCount * pageSize, step.totalPageCount * pageSize)
                }
            }
            return Snapshot(token: token, time: time, counts: counts)
        }
        // One file, whatever the store's journal: the copy opens anywhere as it is.
        try await destination.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
        try destination.close()
        return snapshot
    }

    /// Syncs the file at `path` to its disk.
    static func sync(_ path: String) throws {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DepotError.io("cannot open \(path)", errno: errno) }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw DepotError.io("cannot sync \(path)", errno: errno) }
    }

    /// Syncs the folder of `path`, so that a rename into it lasts.
    static func syncFolder(of path: String) throws {
        try sync(URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// Syncs the file at `path` and reads it through once: its size and SHA-256.
    static func syncAndHash(_ path: String) throws -> (bytes: Int64, sha256: String) {
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw DepotError.io("cannot open \(path)", errno: errno)
        }
        defer { try? handle.close() }
        try handle.synchronize()
        return try digest(handle)
    }

    /// Reads `source` to its end 4 MiB at a time, writing each chunk to
    /// `copy` (the file `copyPath`) when one is given: the bytes read and
    /// their SHA-256 in lowercase hex. A backup's hash and a restore's
    /// checked copy are this one loop.
    ///
    /// A chunk is hashed on another core while it is written and the next
    /// one read (at most two chunks waiting for the hash): a restore takes
    /// about as long as a copy, not a copy and a hash one after the other
    /// (issue 53: 2.18x a synced copy, the target 2x).
    static func digest(_ source: FileHandle, copyingTo copy: FileHandle? = nil, copyPath: String = "") throws
        -> (bytes: Int64, sha256: String)
    {
        let hash = RunningHash()
        let hashing = DispatchQueue(label: "depot.digest")
        let room = DispatchSemaphore(value: 2)
        var bytes: Int64 = 0
        // Whatever ends the loop, the chunks already given are hashed before it returns.
        defer { hashing.sync {} }
        while let chunk = try source.read(upToCount: 4 << 20), !chunk.isEmpty {
            room.wait()
            hashing.async {
                hash.update(chunk)
                room.signal()
            }
            bytes += Int64(chunk.count)
            guard let copy else { continue }
            do {
                try copy.write(contentsOf: chunk)
            } catch let error as NSError {
                let code = error.domain == NSPOSIXErrorDomain ? Int32(error.code) : EIO
                throw DepotError.io("cannot write \(copyPath)", errno: code)
            }
        }
        hashing.sync {}
        return (bytes, hash.hex)
    }

    /// Opens the copy read-only: SQLite's integrity check (unless
    /// `integrity` is false), then every entity's count against the snapshot's.
    ///
    /// - Throws: ``DepotError/Code/database`` naming what differs.
    static func verify(_ path: String, counts: [String: Int], integrity: Bool = true) async throws {
        var configuration = Configuration()
        configuration.readonly = true
        let copy = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? copy.close() }
        try await copy.read { db in
            let problems = integrity ? try String.fetchAll(db, sql: "PRAGMA integrity_check") : ["ok"]
            guard problems == ["ok"] else {
                throw DepotError(
                    .database,
                    "the backup fails SQLite's integrity check: " + problems.prefix(5).joined(separator: "; "))
            }
            for (entity, count) in counts.sorted(by: { $0.key < $1.key }) {
                let found = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SQL.quote(entity))") ?? 0
                guard found == count else {
                    throw DepotError(
                        .database, "the backup holds \(found) records of \(entity) where the store held \(count)")
                }
            }
        }
    }

    /// The manifest of the copy at `path`: `NAME.json` beside `NAME.sqlite`.
    public static func manifestPath(for path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.pathExtension.isEmpty
            ? path + ".json" : url.deletingPathExtension().appendingPathExtension("json").path
    }

    /// Writes `manifest` under a temporary name, synced, then renamed.
    private static func writeManifest(_ manifest: BackupManifest, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = try encoder.encode(manifest) + Data("\n".utf8)
        let partial = path + ".partial"
        guard FileManager.default.createFile(atPath: partial, contents: data) else {
            throw DepotError.io("cannot write \(partial)", errno: errno)
        }
        try sync(partial)
        guard rename(partial, path) == 0 else {
            let code = errno
            unlink(partial)
            throw DepotError.io("cannot move the manifest to \(path)", errno: code)
        }
    }
}

/// Set when the backup's task is cancelled; read by the copy between steps,
/// on the reader's thread.
private final class CancelFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// A SHA-256 fed by ``Store/digest(_:copyingTo:copyPath:)``'s hashing queue.
// @unchecked: updated only on that serial queue, read after it drained (`sync`).
private final class RunningHash: @unchecked Sendable {
    private var state = SHA256()
    func update(_ chunk: Data) { state.update(data: chunk) }
    var hex: String { state.finalize().map { String(format: "%02x", $0) }.joined() }
}
