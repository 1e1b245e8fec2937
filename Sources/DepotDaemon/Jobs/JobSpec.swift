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
    case delete(entity: String, where: Filter)
    /// `compute`: fields and the expressions computed for each record (DESIGN §17).
    case update(entity: String, where: Filter, set: [String: Value], compute: [String: String])
    case dedupe(entity: String, by: [String], keep: DuplicateResolution, where: Filter)
    /// `prefetch`: relationships whose records each exported record embeds (DESIGN §12).
    case export(entity: String, where: Filter, format: ExportFormat, path: String?, prefetch: [String])
    case prune(Prune)
    /// The inverse of a transaction or a job's (DESIGN §17).
    case revert(RevertTarget, onConflict: RevertConflictPolicy)
    /// Converts an entity to its configured shape (DESIGN §18).
    case migrate(entity: String)
    /// A consistent copy of an SQLite store, with its manifest (DESIGN
    /// §20): to `path`, chosen when the job is submitted (`backup_dir`
    /// when the request names none); `verify` checks the copy before it
    /// is renamed into place.
    case backup(path: String?, verify: Bool)

    /// The records a job selects: its `where` and the values of that
    /// predicate's `$name` placeholders (`arguments`), as a fetch takes them.
    /// A literal is a predicate without arguments (`where: "budget > 1"`,
    /// `where: nil`).
    package struct Filter: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByNilLiteral {
        package var predicate: String?
        package var arguments: [String: Value]

        package init(_ predicate: String?, arguments: [String: Value] = [:]) {
            self.predicate = predicate
            self.arguments = arguments
        }

        package init(stringLiteral predicate: String) { self.init(predicate) }

        package init(nilLiteral: ()) { self.init(nil) }

        /// A fetch of `entity`'s records that this filter selects.
        func descriptor(_ entity: String) -> FetchDescriptor {
            FetchDescriptor(entity: entity, where: predicate, arguments: arguments)
        }

        init(of settings: JobSettings) throws {
            self.init(settings.where, arguments: try JSONValue.scalars(settings.arguments, key: "arguments"))
        }

        /// Writes the filter into a job record's settings.
        func write(to s: inout JobSettings) {
            s.where = predicate
            if !arguments.isEmpty { s.arguments = arguments.mapValues(JSONValue.init) }
        }
    }

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
        case .revert: .revert
        case .migrate: .migrate
        case .backup: .backup
        }
    }

    package var entity: String? {
        switch self {
        case .importFile(let entity, _, _), .delete(let entity, _), .update(let entity, _, _, _),
            .dedupe(let entity, _, _, _), .export(let entity, _, _, _, _), .migrate(let entity):
            entity
        case .prune, .revert, .backup:
            nil
        }
    }

    /// An import's input, an export's output or a backup's copy.
    package var path: String? {
        switch self {
        case .importFile(_, let path, _): path
        case .export(_, _, _, let path, _): path
        case .backup(let path, _): path
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
        case .backup(_, let verify): .backup(path: path, verify: verify)
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
        case .delete(let entity, let filter):
            try reader.check(filter.descriptor(entity))
        case .update(let entity, let filter, let values, let compute):
            try reader.checkUpdate(
                entity: entity, where: filter.predicate, arguments: filter.arguments, set: values, compute: compute)
        case .dedupe(let entity, let by, _, let filter):
            try reader.checkDuplicates(
                entity: entity, by: by, where: filter.predicate, arguments: filter.arguments, limit: nil)
        case .export(let entity, let filter, _, _, let prefetch):
            var descriptor = filter.descriptor(entity)
            descriptor.prefetch = prefetch
            try reader.check(descriptor)
        case .migrate(let entity):
            _ = try reader.entity(entity)
        case .prune, .revert, .backup:
            break
        }
    }
}

// MARK: - The wire's settings

extension JobSpec {
    /// The spec of a `kind` job on `entity` with these settings, each read
    /// through its ``JobSetting`` reader; the settings of other kinds are
    /// not read.
    init(kind: JobRecord.Kind, entity: String?, settings: JobSettings) throws {
        func entityName() throws -> String {
            guard let e = entity, !e.isEmpty else {
                throw DepotError(.invalidArgument, "a \(kind.rawValue) job names its entity")
            }
            return e
        }
        switch kind {
        case .import:
            guard let path = settings.path, !path.isEmpty else {
                throw DepotError(
                    .invalidArgument,
                    "an import names a path on the daemon's machine, "
                        + "or uploads the data to /v1/stores/STORE/entities/ENTITY/import")
            }
            let entityName = try entityName()
            var options = ImportOptions()
            let format = try settings.format.flatMap { try JobSetting.read("format", $0, JobSetting.importFormat) }
            options.format = format ?? ImportOptions.Format(fileName: path) ?? .csv
            if let policy = settings.onConflict {
                options.onConflict = try JobSetting.read("on_conflict", policy, JobSetting.conflictPolicy)
            }
            if let limit = settings.maxRejects {
                options.maxRejects = try JobSetting.read("max_rejects", limit, JobSetting.rejectLimit)
            }
            if let references = settings.references {
                options.deferReferences = try JobSetting.read("references", references, JobSetting.references)
            }
            try options.read(dialectOf: settings)
            self = .importFile(entity: entityName, path: path, options: options)
        case .delete:
            self = .delete(entity: try entityName(), where: try Filter(of: settings))
        case .update:
            let values = try JSONValue.scalars(settings.set, key: "set")
            let compute = settings.compute ?? [:]
            guard !values.isEmpty || !compute.isEmpty else {
                throw DepotError(
                    .invalidArgument,
                    "an update job needs set (fields and their new values) or compute (fields and expressions)")
            }
            self = .update(entity: try entityName(), where: try Filter(of: settings), set: values, compute: compute)
        case .dedupe:
            guard let by = settings.by, !by.isEmpty else {
                throw DepotError(
                    .invalidArgument, "a dedupe job needs by: the fields whose equal values make duplicates")
            }
            let keep = try JobSetting.read(
                "keep", settings.keep ?? DuplicateResolution.keepFirst.rawValue, JobSetting.keep)
            self = .dedupe(entity: try entityName(), by: by, keep: keep, where: try Filter(of: settings))
        case .export:
            let format = try JobSetting.read(
                "format", settings.format ?? ExportFormat.ndjson.rawValue, JobSetting.exportFormat)
            self = .export(
                entity: try entityName(), where: try Filter(of: settings), format: format, path: settings.path,
                prefetch: settings.prefetch ?? [])
        case .prune:
            self = .prune(try Prune(before: settings.before, olderThan: settings.olderThan))
        case .revert:
            let policy = try JobSetting.read(
                "on_conflict", settings.onConflict ?? RevertConflictPolicy.skip.rawValue, JobSetting.revertConflict)
            switch (settings.token, settings.job) {
            case (let token?, nil):
                self = .revert(.token(try HistoryToken.parseWhole(token, for: "a revert")), onConflict: policy)
            case (nil, let job?):
                guard !job.isEmpty else { throw DepotError(.invalidArgument, "a revert's job is empty") }
                self = .revert(.job(job), onConflict: policy)
            case (nil, nil):
                throw DepotError(
                    .invalidArgument, "say what to revert: token (a transaction) or job (every transaction of a job)")
            case (_?, _?):
                throw DepotError(.invalidArgument, "give token or job, not both")
            }
        case .migrate:
            self = .migrate(entity: try entityName())
        case .backup:
            if let path = settings.path, path.isEmpty {
                throw DepotError(
                    .invalidArgument, "a backup's path is empty: name a file, or leave it out for backup_dir")
            }
            self = .backup(path: settings.path, verify: settings.verify ?? false)
        }
    }

    /// The settings as the job's record shows them, every default filled in.
    var settings: JobSettings {
        var s = JobSettings()
        switch self {
        case .importFile(_, let path, let options):
            s.path = path
            s.format = options.format.rawValue
            s.onConflict = options.onConflict.rawValue
            s.maxRejects = options.maxRejects.text
            if options.deferReferences { s.references = "defer" }
            options.write(dialectTo: &s)
        case .delete(_, let filter):
            filter.write(to: &s)
        case .update(_, let filter, let values, let compute):
            filter.write(to: &s)
            if !values.isEmpty || compute.isEmpty { s.set = values.mapValues(JSONValue.init) }
            if !compute.isEmpty { s.compute = compute }
        case .dedupe(_, let by, let keep, let filter):
            s.by = by
            s.keep = keep.rawValue
            filter.write(to: &s)
        case .export(_, let filter, let format, let path, let prefetch):
            filter.write(to: &s)
            s.format = format.rawValue
            s.path = path
            if !prefetch.isEmpty { s.prefetch = prefetch }
        case .prune(.before(let token)):
            s.before = token.description
        case .prune(.olderThan(let age)):
            s.olderThan = DurationText.format(age)
        case .revert(let target, let policy):
            switch target {
            case .token(let token): s.token = token.description
            case .job(let job): s.job = job
            }
            s.onConflict = policy.rawValue
        case .migrate:
            break
        case .backup(let path, let verify):
            s.path = path
            s.verify = verify
        }
        return s
    }
}

extension ImportOptions {
    /// Reads an import's dialect settings (`delimiter`, `quote`, `header`,
    /// `escape`, `quotes`, `skip_initial_space`, `nulls`, `columns`, `encoding`).
    mutating func read(dialectOf settings: JobSettings) throws {
        if let d = settings.delimiter { delimiter = try JobSetting.read("delimiter", d, JobSetting.delimiter) }
        if let q = settings.quote {
            let byte = try JobSetting.read("quote", q, JobSetting.quote)
            quote = byte == 0x22 ? nil : byte
        }
        if let e = settings.escape { escape = try JobSetting.read("escape", e, JobSetting.escape) }
        if let h = settings.header { header = h }
        if let q = settings.quotes { lenientQuotes = try JobSetting.read("quotes", q, JobSetting.lenientQuotes) }
        if let s = settings.skipInitialSpace { skipInitialSpace = s }
        if let n = settings.nulls {
            guard n.count <= 64, n.allSatisfy({ $0.utf8.count <= 64 }) else {
                throw DepotError(.invalidArgument, "nulls: at most 64 spellings of at most 64 bytes each")
            }
            nulls = n
        }
        if let c = settings.columns {
            guard Set(c.values).count == c.count else {
                throw DepotError(.invalidArgument, "columns: two columns name the same field")
            }
            columnFields = c
        }
        if let e = settings.encoding { latin1 = try JobSetting.read("encoding", e, JobSetting.latin1) }
    }

    /// The dialect settings that differ from the defaults.
    func write(dialectTo s: inout JobSettings) {
        if let delimiter, delimiter != (format == .tsv ? 0x09 : UInt8(ascii: ",")) {
            s.delimiter = delimiter == 0x09 ? "\t" : String(UnicodeScalar(delimiter))
        }
        if let quote { s.quote = String(UnicodeScalar(quote)) }
        if let escape { s.escape = String(UnicodeScalar(escape)) }
        if !header { s.header = false }
        if lenientQuotes { s.quotes = "lenient" }
        if skipInitialSpace { s.skipInitialSpace = true }
        if !nulls.isEmpty { s.nulls = nulls }
        if !columnFields.isEmpty { s.columns = columnFields }
        if latin1 { s.encoding = "latin-1" }
    }
}
