import DepotEngine
import Foundation

/// Does one job's work on its store, reporting progress as it goes.
struct JobExecutor {
    let stateDir: String
    let store: Store
    let metrics: Metrics
    let progress: @Sendable (JobRecord) -> Void

    init(stateDir: String, store: Store, metrics: Metrics, progress: @escaping @Sendable (JobRecord) -> Void) {
        self.stateDir = stateDir
        self.store = store
        self.metrics = metrics
        self.progress = progress
    }

    static func jobFolder(_ stateDir: String) -> String { stateDir + "/jobs" }

    func run(_ record: inout JobRecord) async throws {
        let entity = record.entity ?? ""
        let author = record.author
        let snapshot = record
        switch record.kind {
        case .import:
            guard let path = record.path else { throw DepotError(.invalidArgument, "an import needs a path") }
            var options = ImportOptions()
            if let f = record.format, f != "auto" {
                guard let format = ImportOptions.Format(rawValue: f) else {
                    throw DepotError(.invalidArgument, "format must be csv, tsv, ndjson or json, not \(JSONText.quoted(f))")
                }
                options.format = format
            } else {
                options.format = ImportOptions.Format(fileName: path) ?? .csv
            }
            if let c = record.onConflict {
                guard let policy = ConflictPolicy(rawValue: c) else {
                    throw DepotError(.invalidArgument, "on_conflict must be upsert, replace, skip or fail")
                }
                options.onConflict = policy
            }
            if let text = record.maxRejects {
                guard let limit = ImportOptions.RejectLimit(text: text) else {
                    throw DepotError(.invalidArgument, "max_rejects must be a count (1000), a fraction (0.01) or a percentage (1%)")
                }
                options.maxRejects = limit
            }
            let folder = Self.jobFolder(stateDir)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let rejects = "\(folder)/\(record.id).rejects.ndjson"
            let request = ImportRequest(job: record.id, entity: entity, path: path, rejectsPath: rejects,
                                        author: author, options: options)
            let metrics = self.metrics
            let progress = self.progress
            let result = try await Importer.run(request, into: store) { p in
                var r = snapshot
                r.apply(p)
                metrics.importProgressed(job: snapshot.id, p)
                progress(r)
            }
            record.apply(result)
            if result.rejected > 0 { record.rejects = rejects } else { try? FileManager.default.removeItem(atPath: rejects) }
        case .delete:
            let counts = try await store.delete(entity: entity, where: record.where, author: author, job: record.id) { c in
                var r = snapshot
                r.apply(c)
                progress(r)
            }
            record.apply(counts)
        case .update:
            let values = (record.set ?? [:]).mapValues(\.value)
            let counts = try await store.update(entity: entity, where: record.where, set: values, author: author,
                                                job: record.id) { c in
                var r = snapshot
                r.apply(c)
                progress(r)
            }
            record.apply(counts)
        case .dedupe:
            guard let by = record.by, !by.isEmpty else {
                throw DepotError(.invalidArgument, "a dedupe job needs by: the fields whose equal values make duplicates")
            }
            let keep = DuplicateResolution(rawValue: record.keep ?? "keep-first") ?? .keepFirst
            let counts = try await store.resolveDuplicates(entity: entity, by: by, keep: keep, where: record.where,
                                                           author: author, job: record.id) { c in
                var r = snapshot
                r.apply(c)
                progress(r)
            }
            record.apply(counts)
        case .prune:
            if let before = record.before {
                guard let token = HistoryToken(before) else {
                    throw DepotError(.invalidToken, "\(JSONText.quoted(before)) is not a history token")
                }
                record.deleted = try await store.pruneHistory(before: token)
            } else if let age = record.olderThan {
                guard let duration = DurationText.parse(age) else {
                    throw DepotError(.invalidArgument, "older_than must be a duration such as \"7d\" or \"12h\"")
                }
                record.deleted = try await store.pruneHistory(olderThan: duration)
            } else {
                throw DepotError(.invalidArgument, "a prune job needs before (a token) or older_than (a duration)")
            }
        case .export:
            try await export(&record)
        }
    }

    /// Writes the entity's records (those matching `where`) to a file, as
    /// NDJSON or CSV, a batch at a time; the file appears complete or not at all.
    func export(_ record: inout JobRecord) async throws {
        let folder = stateDir + "/exports"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let format = record.format ?? "ndjson"
        guard format == "ndjson" || format == "csv" else {
            throw DepotError(.invalidArgument, "an export's format is ndjson or csv")
        }
        let path = record.path ?? "\(folder)/\(record.id).\(format)"
        let temporary = path + ".part"
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let handle = FileHandle(forWritingAtPath: temporary) else {
            throw DepotError(.invalidArgument, "cannot write \(temporary)")
        }
        defer { try? handle.close() }
        var header = true
        var count = 0
        for try await batch in store.reader.enumerate(FetchDescriptor(entity: record.entity ?? "", where: record.where)) {
            var text = ""
            if format == "csv" && header {
                text += batch.fields.map { CSVText.field($0.name) }.joined(separator: ",") + "\r\n"
                header = false
            }
            for row in 0..<batch.count {
                if format == "ndjson" {
                    text += batch.jsonObject(row: row) + "\n"
                } else {
                    text += batch.rows[row].map(CSVText.field).joined(separator: ",") + "\r\n"
                }
            }
            try handle.write(contentsOf: Data(text.utf8))
            count += batch.count
            var r = record
            r.exported = count
            progress(r)
            try Task.checkCancellation()
        }
        try handle.synchronize()
        guard rename(temporary, path) == 0 else {
            throw DepotError(.invalidArgument, "cannot move the export to \(path): \(String(cString: strerror(errno)))")
        }
        record.exported = count
        record.path = path
    }
}

/// CSV output: null is an empty field, the empty string is `""`.
enum CSVText {
    static func field(_ s: String) -> String {
        if s.isEmpty { return "\"\"" }
        if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return s
    }

    static func field(_ v: Value) -> String {
        switch v {
        case .null: return ""
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return JSONText.number(d)
        case .string(let s): return field(s)
        }
    }
}
