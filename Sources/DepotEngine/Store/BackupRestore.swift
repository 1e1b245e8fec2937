public import DepotWire
import Foundation
import GRDB

/// Putting a backup back (DESIGN §20): the copy checked against its
/// manifest (size and SHA-256, as it is read), then the counts (and, with
/// `verify`, SQLite's integrity check) on the new file, before it takes the
/// store's name. The SHA-256 says the bytes are the ones the backup wrote
/// from one consistent snapshot; the integrity check reads every page again.
/// A damaged backup (a flipped byte, a copy cut short, a manifest of
/// another store) is named and nothing is written under the final name.
///
/// ```swift
/// let manifest = try BackupRestore.restore(
///     from: "/var/lib/depot/backups/travel-20261129T081500123Z.sqlite", into: "/var/lib/depot/travel.sqlite",
///     force: true)
/// ```
public enum BackupRestore {
    /// The backups in `folder`, by their manifests, newest first (by the
    /// snapshot's time, then the file's name); `store` keeps that store's.
    public static func backups(in folder: String, store: String? = nil) -> [(manifest: BackupManifest, path: String)] {
        // A copy named outside its folder is never restored; one missing or
        // cut short is, and is refused naming what is wrong with it.
        ((try? BackupFolder.entries(in: folder, store: store)) ?? [])
            .filter { $0.problem != .outsideFolder }.map { ($0.manifest, $0.path) }
    }

    /// The manifest beside the backup at `path`.
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` when there is none or it does not read.
    public static func manifest(of path: String) throws -> BackupManifest {
        let manifestPath = Store.manifestPath(for: path)
        guard let data = FileManager.default.contents(atPath: manifestPath) else {
            throw DepotError(
                .invalidArgument,
                "\(path) has no manifest beside it (\(manifestPath)): a backup is checked against it before it is restored"
            )
        }
        do {
            return try JSONDecoder().decode(BackupManifest.self, from: data)
        } catch {
            throw DepotError(.invalidArgument, "\(manifestPath) is not a backup's manifest: \(error)")
        }
    }

    /// Restores the backup at `path` as the file `into`.
    ///
    /// - Parameters:
    ///   - store: when given, the store the backup must be of.
    ///   - force: replaces an existing `into` (with the journal files
    ///     beside it, which belong to the file replaced).
    ///   - verify: runs SQLite's integrity check on the new file too.
    /// - Returns: the backup's manifest.
    /// - Throws: ``DepotError/Code/conflict`` when `into` exists and
    ///   `force` is not set; ``DepotError/Code/invalidArgument`` naming a
    ///   backup that does not match its manifest or its store;
    ///   ``DepotError/Code/io`` or ``DepotError/Code/diskFull``. Nothing is
    ///   written under `into`'s name unless the restore succeeds.
    @discardableResult
    public static func restore(
        from path: String, into: String, store: String? = nil, force: Bool = false, verify: Bool = false
    ) async throws
        -> BackupManifest
    {
        let manifest = try manifest(of: path)
        if let store, manifest.store != store {
            throw DepotError(
                .invalidArgument,
                "\(path) is a backup of store \(JSONText.quoted(manifest.store)), not of \(JSONText.quoted(store))")
        }
        if FileManager.default.fileExists(atPath: into), !force {
            throw DepotError(.conflict, "\(into) exists: --force replaces it (the store must not be open)")
        }
        let partial = into + ".partial"
        unlink(partial)
        do {
            try copyChecking(path, manifest: manifest, to: partial)
            try await check(partial, manifest: manifest, named: path, integrity: verify)
            // The journal beside the file replaced is that file's: left, SQLite would play it over the backup.
            for stale in ["-wal", "-shm", "-journal"] { unlink(into + stale) }
            guard rename(partial, into) == 0 else {
                throw DepotError.io("cannot move the restored store to \(into)", errno: errno)
            }
            try Store.syncFolder(of: into)
            return manifest
        } catch {
            unlink(partial)
            unlink(partial + "-journal")
            throw error
        }
    }

    /// Copies `path` to `target` a megabyte at a time, hashing as it reads;
    /// throws naming what differs from `manifest` (size, SHA-256) once read.
    private static func copyChecking(_ path: String, manifest: BackupManifest, to target: String) throws {
        guard let source = FileHandle(forReadingAtPath: path) else {
            throw DepotError(.invalidArgument, "cannot read the backup \(path): \(String(cString: strerror(errno)))")
        }
        defer { try? source.close() }
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DepotError.io("cannot write \(target)", errno: errno) }
        let out = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let (bytes, sha256) = try Store.digest(source, copyingTo: out, copyPath: target)
        guard bytes == manifest.bytes else {
            throw DepotError(
                .invalidArgument,
                "\(path) is cut short or grew: \(bytes) bytes where its manifest says \(manifest.bytes); nothing was restored"
            )
        }
        guard sha256 == manifest.sha256 else {
            throw DepotError(
                .invalidArgument,
                "\(path) is damaged: its SHA-256 is \(sha256) where its manifest says \(manifest.sha256); "
                    + "nothing was restored")
        }
        try out.synchronize()
    }

    /// The counts of the restored file against the manifest's, after SQLite's integrity check when asked.
    private static func check(_ file: String, manifest: BackupManifest, named path: String, integrity: Bool)
        async throws
    {
        do {
            try await Store.verify(file, counts: manifest.entities, integrity: integrity)
        } catch let error as DepotError {
            throw DepotError(.invalidArgument, "\(path) does not restore: \(error.message); nothing was restored")
        }
    }
}
