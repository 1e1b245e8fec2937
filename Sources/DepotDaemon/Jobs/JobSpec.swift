package import DepotEngine
import DepotWire

/// What a job does, one case per kind, every setting in its engine type.
///
/// A spec is read once, where the job enters: decoded from a
/// `POST /v1/jobs` body (``JobSubmission``), built from an upload's query
/// or a `[[watch]]` table, each setting through its one reader
/// (``JobSetting``); a bad setting is refused with `400` before anything is
/// queued. It is kept in the job's record (the same keys, flat) and decoded
/// back from it, through the same readers, when the daemon starts again, so
/// that a persisted job that can no longer run is marked failed instead of
/// resumed. ``JobExecutor`` switches over it and parses nothing.
///
/// For example:
///
/// ```swift
/// let spec = try JSONDecoder().decode(JobSubmission.self, from: Data(
///     #"{"kind":"prune","store":"travel","older_than":"7d"}"#.utf8)).spec
/// // .prune(.olderThan(.seconds(604_800)))
/// ```
package enum JobSpec: Sendable, Hashable {
    case importFile(entity: String, path: String, options: ImportOptions)
    case delete(entity: String, where: String?)
    case update(entity: String, where: String?, set: [String: Value])
    case dedupe(entity: String, by: [String], keep: DuplicateResolution, where: String?)
    /// `prefetch`: relationships whose records each exported record embeds (DESIGN §12).
    case export(entity: String, where: String?, format: ExportFormat, path: String?, prefetch: [String])
    case prune(Prune)

    /// What a prune removes.
    package enum Prune: Sendable, Hashable {
        case before(HistoryToken)
        case olderThan(Duration)

        /// Reads a prune's `before` or `older_than`, from a job or from
        /// `DELETE /v1/stores/{store}/history`.
        ///
        /// - Throws: ``DepotError`` unless exactly one is given and valid.
        init(before: String?, olderThan: String?) throws {
            switch (before, olderThan) {
            case (let before?, nil):
                self = .before(try HistoryToken.parseWhole(before, for: "a prune"))
            case (nil, let age?):
                self = .olderThan(try JobSetting.read("older_than", age, JobSetting.age))
            case (nil, nil):
                throw DepotError(
                    .invalidArgument,
                    "say which history to prune: before (a token) or older_than (a duration such as 7d)")
            case (_?, _?):
                throw DepotError(.invalidArgument, "give before or older_than, not both")
            }
        }
    }

    /// What an export writes.
    package enum ExportFormat: String, Sendable {
        case ndjson, csv
    }

    package var kind: JobRecord.Kind {
        switch self {
        case .importFile: .import
        case .delete: .delete
        case .update: .update
        case .dedupe: .dedupe
        case .export: .export
        case .prune: .prune
        }
    }

    package var entity: String? {
        switch self {
        case .importFile(let entity, _, _), .delete(let entity, _), .update(let entity, _, _),
            .dedupe(let entity, _, _, _), .export(let entity, _, _, _, _):
            entity
        case .prune:
            nil
        }
    }

    /// An import's input or an export's output.
    package var path: String? {
        switch self {
        case .importFile(_, let path, _): path
        case .export(_, _, _, let path, _): path
        default: nil
        }
    }

    /// The spec with its file set: an upload's spool file, an export's
    /// output once chosen.
    func with(path: String) -> JobSpec {
        switch self {
        case .importFile(let entity, _, let options): .importFile(entity: entity, path: path, options: options)
        case .export(let entity, let predicate, let format, _, let prefetch):
            .export(entity: entity, where: predicate, format: format, path: path, prefetch: prefetch)
        default: self
        }
    }

    /// Checks the spec against its store's schema: the entity, the
    /// predicate, the fields and the values, as running it would.
    ///
    /// - Throws: the ``DepotError`` the job would fail with before writing anything.
    func check(against reader: any StoreReading) throws {
        switch self {
        case .importFile(let entity, _, _):
            _ = try reader.entity(entity)
        case .delete(let entity, let predicate):
            try reader.check(FetchDescriptor(entity: entity, where: predicate))
        case .update(let entity, let predicate, let values):
            try reader.checkUpdate(entity: entity, where: predicate, arguments: [:], set: values)
        case .dedupe(let entity, let by, _, let predicate):
            try reader.checkDuplicates(entity: entity, by: by, where: predicate, arguments: [:], limit: nil)
        case .export(let entity, let predicate, _, _, let prefetch):
            var descriptor = FetchDescriptor(entity: entity, where: predicate)
            descriptor.prefetch = prefetch
            try reader.check(descriptor)
        case .prune:
            break
        }
    }
}

// MARK: - Coding

extension JobSpec {
    /// The settings' keys, shared by job records and `POST /v1/jobs` bodies.
    enum Key: String, CodingKey {
        case entity, path, format, onConflict = "on_conflict", maxRejects = "max_rejects", `where`, set, by, keep
        case before, olderThan = "older_than", prefetch, references
    }

    /// Reads the settings of a job of `kind` from `decoder`'s keyed container.
    ///
    /// - Throws: ``DepotError`` (`invalidArgument`, or `invalidToken` for a
    ///   prune's token) naming the setting and what it accepts; a
    ///   `DecodingError` for a value of the wrong JSON type.
    init(kind: JobRecord.Kind, from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        func text(_ key: Key) throws -> String? { try c.decodeIfPresent(String.self, forKey: key) }
        func entity() throws -> String {
            guard let e = try text(.entity), !e.isEmpty else {
                throw DepotError(.invalidArgument, "a \(kind.rawValue) job names its entity")
            }
            return e
        }
        switch kind {
        case .import:
            guard let path = try text(.path), !path.isEmpty else {
                throw DepotError(
                    .invalidArgument,
                    "an import names a path on the daemon's machine, "
                        + "or uploads the data to /v1/stores/STORE/entities/ENTITY/import")
            }
            let entityName = try entity()
            var options = ImportOptions()
            let format = try text(.format).flatMap { try JobSetting.read("format", $0, JobSetting.importFormat) }
            options.format = format ?? ImportOptions.Format(fileName: path) ?? .csv
            if let policy = try text(.onConflict) {
                options.onConflict = try JobSetting.read("on_conflict", policy, JobSetting.conflictPolicy)
            }
            if let limit = try Self.rejectLimitText(c) {
                options.maxRejects = try JobSetting.read("max_rejects", limit, JobSetting.rejectLimit)
            }
            if let references = try text(.references) {
                options.deferReferences = try JobSetting.read("references", references, JobSetting.references)
            }
            self = .importFile(entity: entityName, path: path, options: options)
        case .delete:
            self = .delete(entity: try entity(), where: try text(.where))
        case .update:
            let values = try JSONValue.scalars(c.decodeIfPresent([String: JSONValue].self, forKey: .set), key: "set")
            guard !values.isEmpty else {
                throw DepotError(.invalidArgument, "an update job needs set: the fields to change and their values")
            }
            self = .update(entity: try entity(), where: try text(.where), set: values)
        case .dedupe:
            guard let by = try c.decodeIfPresent([String].self, forKey: .by), !by.isEmpty else {
                throw DepotError(
                    .invalidArgument, "a dedupe job needs by: the fields whose equal values make duplicates")
            }
            let keep = try JobSetting.read(
                "keep", try text(.keep) ?? DuplicateResolution.keepFirst.rawValue, JobSetting.keep)
            self = .dedupe(entity: try entity(), by: by, keep: keep, where: try text(.where))
        case .export:
            let format = try JobSetting.read(
                "format", try text(.format) ?? ExportFormat.ndjson.rawValue,
                JobSetting.exportFormat)
            self = .export(
                entity: try entity(), where: try text(.where), format: format, path: try text(.path),
                prefetch: try c.decodeIfPresent([String].self, forKey: .prefetch) ?? [])
        case .prune:
            self = .prune(try Prune(before: try text(.before), olderThan: try text(.olderThan)))
        }
    }

    /// `max_rejects` as text: a JSON string ("1%") or number (1000, 0.01).
    private static func rejectLimitText(_ c: KeyedDecodingContainer<Key>) throws -> String? {
        guard c.contains(.maxRejects), try !c.decodeNil(forKey: .maxRejects) else { return nil }
        if let text = try? c.decode(String.self, forKey: .maxRejects) { return text }
        if let count = try? c.decode(Int.self, forKey: .maxRejects) { return String(count) }
        return String(try c.decode(Double.self, forKey: .maxRejects))
    }

    /// Writes the settings under the same keys ``init(kind:from:)`` reads.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(entity, forKey: .entity)
        switch self {
        case .importFile(_, let path, let options):
            try c.encode(path, forKey: .path)
            try c.encode(options.format.rawValue, forKey: .format)
            try c.encode(options.onConflict.rawValue, forKey: .onConflict)
            try c.encode(options.maxRejects.text, forKey: .maxRejects)
            if options.deferReferences { try c.encode("defer", forKey: .references) }
        case .delete(_, let predicate):
            try c.encodeIfPresent(predicate, forKey: .where)
        case .update(_, let predicate, let values):
            try c.encodeIfPresent(predicate, forKey: .where)
            try c.encode(values.mapValues(JSONValue.init), forKey: .set)
        case .dedupe(_, let by, let keep, let predicate):
            try c.encode(by, forKey: .by)
            try c.encode(keep.rawValue, forKey: .keep)
            try c.encodeIfPresent(predicate, forKey: .where)
        case .export(_, let predicate, let format, let path, let prefetch):
            try c.encodeIfPresent(predicate, forKey: .where)
            try c.encode(format.rawValue, forKey: .format)
            try c.encodeIfPresent(path, forKey: .path)
            if !prefetch.isEmpty { try c.encode(prefetch, forKey: .prefetch) }
        case .prune(.before(let token)):
            try c.encode(token.description, forKey: .before)
        case .prune(.olderThan(let age)):
            try c.encode(DurationText.format(age), forKey: .olderThan)
        }
    }
}
