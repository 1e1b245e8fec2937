import DepotEngine
import DepotVersion
import DepotWire
import Foundation

/// Does one job's work on its store, reporting progress as it goes.
struct JobExecutor {
    let stateDir: String
    let store: any StoreBackend
    let metrics: Metrics
    let progress: @Sendable (JobRecord) -> Void

    init(stateDir: String, store: any StoreBackend, metrics: Metrics, progress: @escaping @Sendable (JobRecord) -> Void)
    {
        self.stateDir = stateDir
        self.store = store
        self.metrics = metrics
        self.progress = progress
    }

    static func jobFolder(_ stateDir: String) -> String { stateDir + "/jobs" }

    /// Job `id`'s rejects file, in ``jobFolder(_:)``.
    static func rejectsPath(_ stateDir: String, job id: String) -> String {
        "\(jobFolder(stateDir))/\(id).rejects.ndjson"
    }

    func run(_ record: inout JobRecord) async throws {
        let author = record.author
        let snapshot = record
        let progress = self.progress
        guard let spec = record.spec else {
            throw DepotError(.invalidArgument, "job \(record.id) has no settings that can be read")
        }
        switch spec {
        case .importFile(let entity, let path, let options):
            let folder = Self.jobFolder(stateDir)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let rejects = Self.rejectsPath(stateDir, job: record.id)
            let request = ImportRequest(
                job: record.id, entity: entity, path: path, rejectsPath: rejects,
                author: author, options: options)
            let metrics = self.metrics
            let result: ImportProgress
            do {
                result = try await store.importFile(request) { p in
                    var r = snapshot
                    r.apply(p)
                    metrics.importProgressed(job: snapshot.id, p)
                    progress(r)
                }
            } catch {
                // A failed job leaves no empty rejects file (issue #35).
                if FileIdentity.status(atPath: rejects)?.size == 0 { unlink(rejects) }
                throw error
            }
            record.apply(result)
            if result.rejected > 0 {
                record.rejects = rejects
            } else {
                try? FileManager.default.removeItem(atPath: rejects)
            }
        case .delete(let entity, let predicate):
            let counts = try await store.delete(
                entity: entity, where: predicate.predicate, arguments: predicate.arguments, author: author,
                job: record.id,
                batchSize: nil
            ) { c in
                var r = snapshot
                r.apply(c)
                progress(r)
            }
            record.apply(counts)
        case .update(let entity, let predicate, let values, let compute):
            try await withRejectsFile(&record) { rejects in
                try await store.update(
                    entity: entity, where: predicate.predicate, arguments: predicate.arguments, set: values,
                    compute: compute,
                    author: author, job: snapshot.id, batchSize: nil, rejectsPath: compute.isEmpty ? nil : rejects
                ) { c in
                    var r = snapshot
                    r.apply(c)
                    progress(r)
                }
            }
        case .dedupe(let entity, let by, let keep, let predicate):
            let counts = try await store.resolveDuplicates(
                entity: entity, by: by, keep: keep, where: predicate.predicate,
                arguments: predicate.arguments, author: author, job: record.id,
                batchSize: nil
            ) { c in
                var r = snapshot
                r.apply(c)
                progress(r)
            }
            record.apply(counts)
        case .revert(let target, let policy):
            let label =
                switch target {
                case .token(let token): "revert:\(token)"
                case .job(let job): "revert:\(job)"
                }
            try await withRejectsFile(&record) { rejects in
                try await store.revert(
                    target, onConflict: policy, author: label, job: snapshot.id, batchSize: nil, rejectsPath: rejects
                ) { c in
                    var r = snapshot
                    r.apply(c)
                    progress(r)
                }
            }
        case .migrate(let entity):
            try await withRejectsFile(&record) { rejects in
                try await store.migrate(
                    entity: entity, author: author, job: snapshot.id, batchSize: nil, rejectsPath: rejects
                ) { c in
                    var r = snapshot
                    r.apply(c)
                    progress(r)
                }
            }
        case .prune(.before(let token)):
            record.apply(try await store.pruneHistory(before: token))
        case .prune(.olderThan(let age)):
            record.apply(try await store.pruneHistory(olderThan: age))
        case .export(let entity, let predicate, let format, let path, let prefetch):
            try await export(&record, entity: entity, where: predicate, format: format, path: path, prefetch: prefetch)
        case .backup(let path, let verify):
            guard let sqlite = store as? Store else { throw Self.postgresBackup(store.name) }
            guard let path else { throw DepotError(.invalidArgument, "job \(record.id) names no file for its backup") }
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            record.backup = try await sqlite.backup(
                to: path, depotVersion: DepotVersion.current, job: record.id, verify: verify
            ) {
                done, total in
                var r = snapshot
                r.counters.bytesRead = Int64(done)
                r.counters.bytesTotal = Int64(total)
                progress(r)
            }
            record.counters.bytesRead = record.backup?.bytes ?? 0
            record.counters.bytesTotal = record.backup?.bytes ?? 0
        }
    }

    /// The refusal of a backup job on a PostgreSQL store, which PostgreSQL backs up (DESIGN §20).
    static func postgresBackup(_ store: String) -> DepotError {
        DepotError(
            .invalidArgument,
            "store \(JSONText.quoted(store)) is on PostgreSQL, which backs it up: base backups and WAL archiving "
                + "(docs/postgresql.md, \"Backups\"); a backup job copies an SQLite store")
    }

    /// Runs a write job whose refused records go to the job's rejects file
    /// (`jobs/ID.rejects.ndjson`, handed to `body`), and applies its counts:
    /// the record names the file when it lists any, and no empty file stays.
    private func withRejectsFile(_ record: inout JobRecord, _ body: (String) async throws -> WriteCounts)
        async throws
    {
        let folder = Self.jobFolder(stateDir)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let rejects = Self.rejectsPath(stateDir, job: record.id)
        let counts: WriteCounts
        do {
            counts = try await body(rejects)
        } catch {
            if FileIdentity.status(atPath: rejects)?.size == 0 { unlink(rejects) }
            throw error
        }
        record.apply(counts)
        if counts.rejected > 0 {
            record.rejects = rejects
        } else {
            try? FileManager.default.removeItem(atPath: rejects)
        }
    }

    /// Writes the entity's records (those matching `where`) to a file, as
    /// NDJSON or CSV, streamed; the file appears complete or not at all.
    /// Prefetched records are embedded (NDJSON) or flattened (CSV, ``CSVText/header(_:)``).
    func export(
        _ record: inout JobRecord, entity: String, where filter: JobSpec.Filter, format: JobSpec.ExportFormat,
        path: String?, prefetch: [String]
    ) async throws {
        let folder = stateDir + "/exports"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = path ?? "\(folder)/\(record.id).\(format.rawValue)"
        let temporary = path + ".part"
        // Never through a link put in its place (issue #35): the daemon
        // would write wherever it leads.
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard fd >= 0 else {
            let code = errno
            // A link put in its place, or a folder that is not there: the path is the caller's to fix.
            if code == ELOOP || code == ENOENT || code == ENOTDIR {
                throw DepotError(
                    .invalidArgument,
                    "cannot write \(temporary): "
                        + (code == ELOOP ? "it is a symbolic link" : String(cString: strerror(code))))
            }
            throw DepotError.io("cannot write \(temporary)", errno: code)
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var descriptor = filter.descriptor(entity)
        descriptor.prefetch = prefetch
        let count: Int
        if prefetch.isEmpty {
            // Straight from SQLite's rows to the file, in one snapshot.
            let snapshot = record, progress = self.progress
            let fd = handle.fileDescriptor
            count = try await store.reads.export(
                descriptor, as: format == .csv ? .csv : .ndjson,
                write: { bytes in
                    try Self.writeAll(fd, bytes, path: temporary)
                },
                progress: { n in
                    var r = snapshot
                    r.exported = n
                    progress(r)
                })
        } else {
            count = try await exportEmbedding(record, descriptor, format: format, to: handle)
        }
        try handle.synchronize()
        guard rename(temporary, path) == 0 else {
            throw DepotError.io("cannot move the export to \(path)", errno: errno)
        }
        record.exported = count
        record.spec = record.spec?.with(path: path)
    }

    /// An export whose records embed related ones: a batch of records at a
    /// time, through ``RecordSet``, which holds them.
    private func exportEmbedding(
        _ record: JobRecord, _ descriptor: FetchDescriptor, format: JobSpec.ExportFormat,
        to handle: FileHandle
    ) async throws -> Int {
        var header = true
        var count = 0
        for try await batch in store.reads.enumerate(descriptor) {
            var text = ""
            if format == .csv && header {
                text += CSVText.header(batch).map(CSVText.field).joined(separator: ",") + "\r\n"
                header = false
            }
            for row in 0..<batch.count {
                if format == .ndjson {
                    text += batch.jsonObject(row: row) + "\n"
                } else {
                    var cells: [String] = []
                    CSVText.cells(batch, row: row, into: &cells)
                    text += cells.joined(separator: ",") + "\r\n"
                }
            }
            try handle.write(contentsOf: Data(text.utf8))
            count += batch.count
            var r = record
            r.exported = count
            progress(r)
            try Task.checkCancellation()
        }
        return count
    }

    /// Writes every byte of `bytes` to `fd`, through interrupted and partial writes.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw DepotError.io("cannot write \(path)", errno: errno)
            }
            offset += n
        }
    }
}
