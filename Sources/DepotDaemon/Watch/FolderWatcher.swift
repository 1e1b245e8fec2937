import DepotEngine
import Foundation
import Logging
import Synchronization

/// Watched folders (DESIGN §7): inotify (`IN_CLOSE_WRITE`, `IN_MOVED_TO`)
/// plus a scan when a watch starts; each file becomes one import job; on
/// success it moves to `.done/` (or is deleted), on failure to `.failed/`
/// with `NAME.error.json`; content imported before is not imported again.
public actor FolderWatcher {
    private let jobs: JobManager
    private let logger: Logger
    private var watches: [Int32: DaemonConfig.Watch] = [:]
    private var folders: Set<String> = []
    /// Files with a job not yet finished.
    private var pending: Set<String> = []
    private let inotify: Int32
    private let stopped = Flag()
    private var reader: Thread?

    public init(jobs: JobManager, logger: Logger) {
        self.jobs = jobs
        self.logger = logger
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    }

    /// Starts watching a folder: creates it when missing, adds the inotify
    /// watch first and then scans, so no file slips between the two.
    public func add(_ watch: DaemonConfig.Watch) async throws {
        guard !folders.contains(watch.path) else { return }
        for sub in ["", "/.done", "/.failed"] {
            do {
                try FileManager.default.createDirectory(atPath: watch.path + sub, withIntermediateDirectories: true)
            } catch {
                throw DepotError(.invalidArgument, "cannot create the watched folder \(watch.path + sub): "
                    + "\(error.localizedDescription); create it or fix [[watch]] path")
            }
        }
        guard inotify >= 0 else { throw DepotError(.invalidArgument, "inotify is not available: \(String(cString: strerror(errno)))") }
        let wd = inotify_add_watch(inotify, watch.path, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO))
        guard wd >= 0 else {
            throw DepotError(.invalidArgument, "cannot watch \(watch.path): \(String(cString: strerror(errno)))")
        }
        watches[wd] = watch
        folders.insert(watch.path)
        for record in await jobs.all() where !record.state.isFinal {
            if let file = record.watchFile { pending.insert(file) }
        }
        startReader()
        logger.info("watching a folder", metadata: [
            "PATH": "\(watch.path)", "STORE": "\(watch.store)", "ENTITY": "\(watch.entity)"])
        await scan(wd)
    }

    /// The folders watched now, each with how many of its files wait for their job.
    public func list() -> [(watch: DaemonConfig.Watch, pending: Int)] {
        watches.values.sorted { $0.path < $1.path }.map { watch in
            (watch, pending.filter { $0.hasPrefix(watch.path + "/") }.count)
        }
    }

    public func stop() {
        stopped.set()
    }

    private func scan(_ wd: Int32) async {
        guard let watch = watches[wd] else { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: watch.path)) ?? []
        for name in names.sorted() { await consider(name, in: wd) }
    }

    private func rescanAll() async {
        for wd in watches.keys { await scan(wd) }
    }

    static func ignored(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix(".tmp") || name.hasSuffix(".part") || name.hasSuffix(".error.json")
    }

    private func consider(_ name: String, in wd: Int32) async {
        guard let watch = watches[wd], !Self.ignored(name) else { return }
        let path = watch.path + "/" + name
        guard !pending.contains(path) else { return }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { return }
        pending.insert(path)
        do {
            let hash = try ContentHash.of(path: path)
            if let store = await jobs.store(watch.store), let job = try await store.importedFile(hash: hash) {
                logger.info("a file's content was imported already; not importing it again",
                            metadata: ["PATH": "\(path)", "STORE": "\(watch.store)", "JOB_ID": "\(job)"])
                finish(path, watch: watch, error: nil)
                pending.remove(path)
                return
            }
            var record = JobRecord(id: ControlRoutes.newJobID(), kind: .import, store: watch.store,
                                   entity: watch.entity, author: "watch:\(watch.path)")
            record.path = path
            record.watchFile = path
            record.contentHash = hash
            record.onConflict = watch.onConflict.rawValue
            record.maxRejects = watch.maxRejects.text
            if let format = watch.format ?? ImportOptions.Format(fileName: name) {
                record.format = format.rawValue
            } else {
                pending.remove(path)
                finish(path, watch: watch, error: "cannot tell the format of \(name) from its extension "
                    + "(.csv, .tsv, .ndjson, .jsonl, .json); set format in [[watch]]")
                return
            }
            _ = try await jobs.submit(record)
        } catch {
            pending.remove(path)
            logger.error("cannot import a watched file", metadata: ["PATH": "\(path)", "ERROR": "\(error)"])
            finish(path, watch: watch, error: "\(error)")
        }
    }

    /// Moves a file to `.done/` (or deletes it) or to `.failed/` with its error.
    private func finish(_ path: String, watch: DaemonConfig.Watch, error: String?, job: String? = nil) {
        let name = URL(fileURLWithPath: path).lastPathComponent
        if let error {
            let target = watch.path + "/.failed/" + name
            _ = rename(path, target)
            let body = "{\"file\":\(JSONText.quoted(name)),\"job\":\(job.map(JSONText.quoted) ?? "null"),"
                + "\"error\":\(JSONText.quoted(error))}\n"
            _ = FileManager.default.createFile(atPath: target + ".error.json", contents: Data(body.utf8))
            return
        }
        if watch.deleteAfter {
            unlink(path)
        } else {
            _ = rename(path, watch.path + "/.done/" + name)
        }
    }

    /// Called when any job ends: files of watched folders move on.
    public func jobFinished(_ record: JobRecord) async {
        guard let file = record.watchFile else { return }
        defer { pending.remove(file) }
        guard let watch = watches.values.first(where: { file.hasPrefix($0.path + "/") }) else { return }
        if record.state == .succeeded {
            if let hash = record.contentHash, let store = await jobs.store(record.store) {
                try? await store.recordImportedFile(hash: hash, path: file, job: record.id)
            }
            finish(file, watch: watch, error: nil)
        } else if record.state != .cancelled || !stopped.isSet {
            finish(file, watch: watch, error: record.error ?? "the job was \(record.state.rawValue)", job: record.id)
        }
    }

    private func startReader() {
        guard reader == nil else { return }
        let fd = inotify
        let stopped = self.stopped
        let thread = Thread { [weak self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !stopped.isSet {
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, 500)
                guard ready > 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { continue }
                var events: [(Int32, UInt32, String)] = []
                var offset = 0
                // struct inotify_event: wd@0, mask@4, cookie@8, len@12, name@16 (NUL-padded).
                while offset + 16 <= n {
                    let wd = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset, as: Int32.self) }
                    let mask = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 4, as: UInt32.self) }
                    let len = Int(buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 12, as: UInt32.self) })
                    let nameBytes = buffer[(offset + 16)..<min(n, offset + 16 + len)].prefix { $0 != 0 }
                    events.append((wd, mask, String(decoding: nameBytes, as: UTF8.self)))
                    offset += 16 + len
                }
                guard let self else { return }
                Task { await self.handle(events) }
            }
        }
        thread.name = "depot-inotify"
        thread.start()
        reader = thread
    }

    private func handle(_ events: [(Int32, UInt32, String)]) async {
        for (wd, mask, name) in events {
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                await rescanAll()
                continue
            }
            await consider(name, in: wd)
        }
    }
}

/// A 128-bit content hash (two independent 64-bit FNV-1a variants) with the
/// size: tells files apart for "already imported" without a crypto library.
enum ContentHash {
    static func of(path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw DepotError(.invalidArgument, "cannot read \(path)")
        }
        defer { try? handle.close() }
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x84_2222_325c_bf29_ce
        var size = 0
        while true {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            size += chunk.count
            chunk.withUnsafeBytes { bytes in
                for byte in bytes {
                    a = (a ^ UInt64(byte)) &* 0x100_0000_01b3
                    b = (b &* 0x100_0000_01b3) ^ UInt64(byte) ^ (b >> 29)
                }
            }
        }
        return String(a, radix: 16) + String(b, radix: 16) + "-" + String(size)
    }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
