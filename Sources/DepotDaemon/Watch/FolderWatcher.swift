import DepotEngine
import DepotWire
import Foundation
package import Logging
import ServiceLifecycle

/// Watched folders (DESIGN §7): inotify (`IN_CLOSE_WRITE`, `IN_MOVED_TO`)
/// plus a scan when a watch starts; each file becomes one import job; on
/// success it moves to `.done/` (or is deleted), on failure to `.failed/`
/// with `NAME.error.json`; content imported before is not imported again.
///
/// A `Service`: ``run()`` reads the inotify events, in order, through one
/// async sequence (``Inotify``) until the daemon shuts down.
package actor FolderWatcher: Service {
    private let jobs: JobManager
    private let logger: Logger
    private var watches: [Int32: DaemonConfig.Watch] = [:]
    private var folders: Set<String> = []
    /// Files with a job not yet finished.
    private var pending: Set<String> = []
    /// Files imported whose move out of the folder failed: not considered
    /// again while the daemon runs (their content hash keeps them from being
    /// imported again after a restart, where it could be recorded).
    private var stranded: Set<String> = []
    private let inotify: Inotify?
    private let inotifyError: (any Error)?
    private var stopped = false

    package init(jobs: JobManager, logger: Logger) {
        self.jobs = jobs
        self.logger = logger
        do {
            inotify = try Inotify()
            inotifyError = nil
        } catch {
            inotify = nil
            inotifyError = error
        }
    }

    /// Starts watching a folder: creates it when missing, adds the inotify
    /// watch first and then scans, so no file slips between the two.
    package func add(_ watch: DaemonConfig.Watch) async throws {
        guard let wd = try prepare(watch) else { return }
        await start(watch, wd)
    }

    /// The first half of ``add(_:)``, which may fail: the folders exist and
    /// the inotify watch is there, but its events are not read yet. `nil`
    /// when the folder is watched already.
    func prepare(_ watch: DaemonConfig.Watch) throws -> Int32? {
        guard !folders.contains(watch.path) else { return nil }
        for sub in ["", "/.done", "/.failed"] {
            do {
                try FileManager.default.createDirectory(atPath: watch.path + sub, withIntermediateDirectories: true)
            } catch {
                throw DepotError(
                    .invalidArgument,
                    "cannot create the watched folder \(watch.path + sub): "
                        + "\((error as NSError).localizedFailureReason ?? error.localizedDescription); create it or fix [[watch]] path"
                )
            }
        }
        guard let inotify else { throw inotifyError ?? DepotError(.invalidArgument, "inotify is not available") }
        return try inotify.add(watch.path)
    }

    /// Takes back a watch made by ``prepare(_:)`` that will not start.
    func discard(_ wd: Int32) {
        guard watches[wd] == nil else { return }
        inotify?.remove(wd)
    }

    /// The second half of ``add(_:)``, which cannot fail: reads the
    /// folder's events and scans it.
    func start(_ watch: DaemonConfig.Watch, _ wd: Int32) async {
        watches[wd] = watch
        folders.insert(watch.path)
        for record in await jobs.all() where !record.state.isFinal {
            if let file = record.watchFile { pending.insert(file) }
        }
        logger.info(
            "watching a folder",
            metadata: [
                LogKey.path: "\(watch.path)", LogKey.store: "\(watch.store)", LogKey.entity: "\(watch.entity)"
            ])
        await scan(wd)
    }

    /// Reads the folders' events until the daemon shuts down.
    package func run() async throws {
        guard let inotify else {
            // No inotify (add() refuses every watch, saying why): nothing to
            // read, but the service lasts as long as the daemon.
            try? await gracefulShutdown()
            return
        }
        try await inotify.read { events in await self.handle(events) }
    }

    /// The folders watched now, each with how many of its files wait for their job.
    package func list() -> [(watch: DaemonConfig.Watch, pending: Int)] {
        watches.values.sorted { $0.path < $1.path }.map { watch in
            (watch, pending.filter { $0.hasPrefix(watch.path + "/") }.count)
        }
    }

    /// The daemon stops: from now on no file is considered, a file whose
    /// consideration fails stays where it is, and a job cancelled by the
    /// shutdown leaves its file in place; all wait for the next start.
    package func stop() {
        stopped = true
    }

    private func scan(_ wd: Int32) async {
        guard let watch = watches[wd] else { return }
        guard let entries = Self.entries(of: watch.path) else {
            logger.error(
                "cannot list a watched folder",
                metadata: [
                    LogKey.path: "\(watch.path)", LogKey.error: "\(String(cString: strerror(errno)))"
                ])
            return
        }
        for bytes in entries.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            await consider(String(decoding: bytes, as: UTF8.self), bytes: bytes, in: wd)
        }
    }

    /// The names in a folder, as bytes (a name need not be UTF-8); `nil`
    /// with `errno` set when it cannot be listed.
    static func entries(of path: String) -> [[UInt8]]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if bytes != [0x2E] && bytes != [0x2E, 0x2E] { names.append(bytes) }
        }
        return names
    }

    /// A file whose name is not UTF-8 (issue #35: it was never imported,
    /// failed or counted): moved to `.failed/` under its own bytes, with
    /// its reasons beside it, so that whoever dropped it sees why.
    private func refuseName(_ bytes: [UInt8], watch: DaemonConfig.Watch) {
        let shown = String(decoding: bytes, as: UTF8.self)
        let folder = Array(watch.path.utf8)
        let from = folder + [0x2F] + bytes
        let to = folder + Array("/.failed/".utf8) + bytes
        let moved = Self.withPath(from) { f in Self.withPath(to) { t in rename(f, t) == 0 } }
        guard moved else {
            logger.error(
                "a watched file whose name is not UTF-8 cannot leave its folder",
                metadata: [LogKey.path: "\(watch.path)/\(shown)", LogKey.error: "\(String(cString: strerror(errno)))"])
            return
        }
        logger.error(
            "a watched file's name is not UTF-8; it is not imported",
            metadata: [LogKey.path: "\(watch.path)/\(shown)"])
        let body =
            "{\"file\":\(JSONText.quoted(shown)),\"job\":null,\"error\":"
            + JSONText.quoted(
                "the file's name is not UTF-8, so it is not imported; give it a UTF-8 name and drop it again")
            + "}\n"
        let error = to + Array(".error.json".utf8)
        _ = Self.withPath(error) { p in
            let fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            return body.utf8CString.withUnsafeBytes {
                FileOutput.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0.dropLast())) == nil
            }
        }
    }

    /// `body` with `bytes` as a C path.
    private static func withPath<T>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> T) -> T {
        (bytes + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) } }
    }

    private func rescanAll() async {
        for wd in watches.keys { await scan(wd) }
    }

    static func ignored(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix(".tmp") || name.hasSuffix(".part") || name.hasSuffix(".error.json")
    }

    private func consider(_ name: String, bytes: [UInt8], in wd: Int32) async {
        // Once the daemon stops, files wait in the folder for the next start.
        guard !stopped, let watch = watches[wd], !Self.ignored(name) else { return }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            refuseName(bytes, watch: watch)
            return
        }
        let path = watch.path + "/" + name
        guard !pending.contains(path), !stranded.contains(path) else { return }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            return
        }
        pending.insert(path)
        do {
            let hash = try ContentHash.of(path: path)
            if let store = jobs.stores.store(watch.store), let job = try await store.jobs.importedFile(hash: hash) {
                logger.info(
                    "a file's content was imported already; not importing it again",
                    metadata: [LogKey.path: "\(path)", LogKey.store: "\(watch.store)", LogKey.jobID: "\(job)"])
                finish(path, watch: watch, error: nil)
                pending.remove(path)
                return
            }
            guard let format = watch.format ?? ImportOptions.Format(fileName: name) else {
                pending.remove(path)
                finish(
                    path, watch: watch,
                    error: "cannot tell the format of \(name) from its extension "
                        + "(.csv, .tsv, .ndjson, .jsonl, .json); set format in [[watch]]")
                return
            }
            var options = ImportOptions(format: format, onConflict: watch.onConflict, maxRejects: watch.maxRejects)
            options.deferReferences = watch.deferReferences
            // Read when the configuration was: it cannot fail here.
            try? options.read(dialectOf: watch.dialect)
            var record = JobRecord(
                id: JobRecord.newID(),
                spec: .importFile(entity: watch.entity, path: path, options: options),
                store: watch.store, author: "watch:\(watch.path)")
            record.watchFile = path
            record.contentHash = hash
            _ = try await jobs.submit(record)
        } catch {
            pending.remove(path)
            // The daemon began to stop while the file was considered (its
            // store closed, no job taken): the file stays for the next start.
            if stopped { return }
            logger.error("cannot import a watched file", metadata: [LogKey.path: "\(path)", LogKey.error: "\(error)"])
            finish(path, watch: watch, error: "\(error)")
        }
    }

    /// Moves a file to `.done/` (or deletes it) or to `.failed/` with its
    /// error. Every step is checked: a file that cannot leave the folder is
    /// reported and left alone for the rest of the run, never imported again.
    private func finish(_ path: String, watch: DaemonConfig.Watch, error: String?, job: String? = nil) {
        let name = URL(fileURLWithPath: path).lastPathComponent
        if let error {
            let target = watch.path + "/.failed/" + name
            guard moved(path, to: target, job: job) else { return }
            let body =
                "{\"file\":\(JSONText.quoted(name)),\"job\":\(job.map(JSONText.quoted) ?? "null"),"
                + "\"error\":\(JSONText.quoted(error))}\n"
            if !FileManager.default.createFile(atPath: target + ".error.json", contents: Data(body.utf8)) {
                logger.error(
                    "cannot write a failed file's reasons",
                    metadata: [
                        LogKey.path: "\(target).error.json", LogKey.jobID: "\(job ?? "")",
                        LogKey.error: "\(String(cString: strerror(errno)))"
                    ])
            }
            return
        }
        if watch.deleteAfter {
            if unlink(path) != 0 && errno != ENOENT {
                strand(path, job: job, action: "delete")
            }
        } else {
            _ = moved(path, to: watch.path + "/.done/" + name, job: job)
        }
    }

    private func moved(_ path: String, to target: String, job: String?) -> Bool {
        guard rename(path, target) == 0 else {
            strand(
                path, job: job,
                action: "move to \(URL(fileURLWithPath: target).deletingLastPathComponent().lastPathComponent)")
            return false
        }
        return true
    }

    private func strand(_ path: String, job: String?, action: String) {
        let error = String(cString: strerror(errno))
        stranded.insert(path)
        logger.error(
            "a watched file cannot leave its folder; it stays and is not imported again",
            metadata: [
                LogKey.path: "\(path)", LogKey.action: "\(action)", LogKey.jobID: "\(job ?? "")",
                LogKey.error: "\(error)"
            ])
    }

    /// Called when any job ends: files of watched folders move on.
    package func jobFinished(_ record: JobRecord) async {
        guard let file = record.watchFile else { return }
        defer { pending.remove(file) }
        guard let watch = watches.values.first(where: { file.hasPrefix($0.path + "/") }) else { return }
        if record.state == .succeeded {
            if let hash = record.contentHash, let store = jobs.stores.store(record.store) {
                do {
                    try await store.jobs.recordImportedFile(hash: hash, path: file, job: record.id)
                } catch {
                    // The file still moves to .done/, so it is not imported
                    // again; only a copy dropped later would be.
                    logger.error(
                        "cannot record an imported file's content hash",
                        metadata: [
                            LogKey.path: "\(file)", LogKey.jobID: "\(record.id)", LogKey.error: "\(error)"
                        ])
                }
            }
            finish(file, watch: watch, error: nil, job: record.id)
        } else if record.state != .cancelled || !stopped {
            finish(file, watch: watch, error: record.error ?? "the job was \(record.state.rawValue)", job: record.id)
        }
    }

    private func handle(_ events: [Inotify.Event]) async {
        for event in events {
            if event.overflowed {
                await rescanAll()
                continue
            }
            await consider(event.name, bytes: event.bytes, in: event.watch)
        }
    }
}
