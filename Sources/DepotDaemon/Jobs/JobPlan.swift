import DepotEngine

/// What a job does, read once from its record with every setting in its
/// engine type.
///
/// A job's settings are read here and nowhere else: where a job enters
/// (`POST /v1/jobs`, an upload's query, a `[[watch]]`), so that a bad one is
/// refused with `400` before it is queued; when the daemon starts, so that a
/// persisted job that can no longer run is marked failed instead of resumed;
/// and by ``JobExecutor``, which parses nothing itself.
///
/// For example:
///
/// ```swift
/// var record = JobRecord(id: "j1", kind: .prune, store: "travel", entity: nil, author: "me")
/// record.olderThan = "1e300s"
/// _ = try JobPlan(record)   // throws invalidArgument: older_than must be a duration from 0s to 36500d, …
/// ```
enum JobPlan: Sendable {
    case importFile(entity: String, path: String, options: ImportOptions)
    case delete(entity: String, where: String?)
    case update(entity: String, where: String?, set: [String: Value])
    case dedupe(entity: String, by: [String], keep: DuplicateResolution, where: String?)
    case export(entity: String, where: String?, format: ExportFormat, path: String?)
    case prune(Prune)

    /// What a prune removes.
    enum Prune: Sendable {
        case before(HistoryToken)
        case olderThan(Duration)

        /// Reads a prune's `before` or `older_than`, from a job or from
        /// `DELETE /v1/stores/{store}/history`.
        ///
        /// - Throws: ``DepotError`` unless exactly one is given and valid.
        init(before: String?, olderThan: String?) throws {
            switch (before, olderThan) {
            case (let before?, nil):
                self = .before(try HistoryToken.parse(before))
            case (nil, let age?):
                do throws(DurationText.Invalid) {
                    self = .olderThan(try DurationText.parse(age, in: DurationText.retention))
                } catch {
                    throw DepotError(.invalidArgument, "older_than \(error.reason), not \(JSONText.quoted(age))")
                }
            case (nil, nil):
                throw DepotError(.invalidArgument, "say which history to prune: before (a token) or older_than (a duration such as 7d)")
            case (_?, _?):
                throw DepotError(.invalidArgument, "give before or older_than, not both")
            }
        }
    }

    /// What an export writes.
    enum ExportFormat: String, Sendable {
        case ndjson, csv
    }

    /// Reads `record`'s settings.
    ///
    /// - Throws: ``DepotError`` (`invalidArgument`, or `invalidToken` for a
    ///   prune's token) naming the setting and what it accepts.
    init(_ record: JobRecord) throws {
        func entity() throws -> String {
            guard let e = record.entity, !e.isEmpty else {
                throw DepotError(.invalidArgument, "a \(record.kind.rawValue) job names its entity")
            }
            return e
        }
        switch record.kind {
        case .import:
            guard let path = record.path else {
                throw DepotError(.invalidArgument, "an import names a path on the daemon's machine, "
                    + "or uploads the data to /v1/stores/STORE/entities/ENTITY/import")
            }
            let entityName = try entity()
            var options = ImportOptions()
            if let f = record.format, f != "auto" {
                guard let format = ImportOptions.Format(rawValue: f) else {
                    throw DepotError(.invalidArgument, "format must be auto, csv, tsv, ndjson or json, not \(JSONText.quoted(f))")
                }
                options.format = format
            } else {
                options.format = ImportOptions.Format(fileName: path) ?? .csv
            }
            if let c = record.onConflict {
                guard let policy = ConflictPolicy(rawValue: c) else {
                    throw DepotError(.invalidArgument, "on_conflict must be upsert, replace, skip or fail, not \(JSONText.quoted(c))")
                }
                options.onConflict = policy
            }
            if let text = record.maxRejects {
                guard let limit = ImportOptions.RejectLimit(text: text) else {
                    throw DepotError(.invalidArgument, "max_rejects \(ImportOptions.RejectLimit.expectation), not \(JSONText.quoted(text))")
                }
                options.maxRejects = limit
            }
            self = .importFile(entity: entityName, path: path, options: options)
        case .delete:
            self = .delete(entity: try entity(), where: record.where)
        case .update:
            let values = (record.set ?? [:]).mapValues(\.value)
            guard !values.isEmpty else {
                throw DepotError(.invalidArgument, "an update job needs set: the fields to change and their values")
            }
            self = .update(entity: try entity(), where: record.where, set: values)
        case .dedupe:
            guard let by = record.by, !by.isEmpty else {
                throw DepotError(.invalidArgument, "a dedupe job needs by: the fields whose equal values make duplicates")
            }
            let keepText = record.keep ?? DuplicateResolution.keepFirst.rawValue
            guard let keep = DuplicateResolution(rawValue: keepText) else {
                throw DepotError(.invalidArgument, "keep must be keep-first or keep-last, not \(JSONText.quoted(keepText))")
            }
            self = .dedupe(entity: try entity(), by: by, keep: keep, where: record.where)
        case .export:
            let formatText = record.format ?? ExportFormat.ndjson.rawValue
            guard let format = ExportFormat(rawValue: formatText) else {
                throw DepotError(.invalidArgument, "an export's format is ndjson or csv, not \(JSONText.quoted(formatText))")
            }
            self = .export(entity: try entity(), where: record.where, format: format, path: record.path)
        case .prune:
            self = .prune(try Prune(before: record.before, olderThan: record.olderThan))
        }
    }

    /// Checks the plan against its store's schema: the entity, the
    /// predicate, the fields and the values, as running it would.
    ///
    /// - Throws: the ``DepotError`` the job would fail with before writing anything.
    func check(against reader: StoreReader) throws {
        switch self {
        case .importFile(let entity, _, _):
            _ = try reader.entity(entity)
        case .delete(let entity, let predicate):
            try reader.check(FetchDescriptor(entity: entity, where: predicate))
        case .update(let entity, let predicate, let values):
            try reader.checkUpdate(entity: entity, where: predicate, set: values)
        case .dedupe(let entity, let by, _, let predicate):
            try reader.checkDuplicates(entity: entity, by: by, where: predicate)
        case .export(let entity, let predicate, _, _):
            try reader.check(FetchDescriptor(entity: entity, where: predicate))
        case .prune:
            break
        }
    }
}
