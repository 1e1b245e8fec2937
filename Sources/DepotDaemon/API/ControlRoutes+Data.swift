import DepotEngine
import DepotWire
import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

extension ControlRoutes {
    /// A fetch of at most this many records is answered from memory; a
    /// larger one, or one without a limit, streams.
    static let pageInMemory = 10_000

    func fetch(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(FetchBody.self, from: request, limit: config.maxRequestBytes)
        let entity = context.parameters.get("entity") ?? ""
        _ = try store.reads.entity(entity)
        let descriptor = try body.descriptor(entity: entity)
        let result = body.result ?? "records"
        guard ["records", "count", "identifiers"].contains(result) else {
            throw APIError(.invalidArgument, "result must be records, count or identifiers")
        }
        if body.changes == true || body.since != nil {
            return try await changes(body, descriptor: descriptor, result: result, store: store, context: context)
        }
        let run: @Sendable () async throws -> String = {
            switch result {
            case "count":
                return Self.line(CountAnswer(count: try await store.reads.count(descriptor)))
            case "identifiers":
                let ids = try await store.reads.identifiers(descriptor)
                return Self.line(IdentifiersAnswer(identifiers: ids.map(JSONValue.init)))
            default:
                if descriptor.sectionBy != nil {
                    let sections = try await store.reads.fetchSections(descriptor)
                    return StreamedJSON.sections(sections.map { ($0.key, $0.records) })
                }
                return StreamedJSON.recordsHead + (try await store.reads.fetchJSON(descriptor)) + "}"
            }
        }
        guard body.watch == true else {
            if result == "records" && descriptor.sectionBy == nil && (descriptor.limit ?? .max) > Self.pageInMemory {
                // An answer of any size: streamed as the engine reads it, on a
                // connection of its own, so that it holds a few chunks in
                // memory and no reader of the pool (issue #35).
                try store.reads.check(descriptor)
                return BytePipe.response(
                    contentType: "application/json", deadline: deadline(context), metrics: metrics,
                    countsAsStream: false
                ) { pipe in
                    try pipe.send(Array(StreamedJSON.recordsHead.utf8))
                    try await store.reads.fetchJSON(descriptor) { try pipe.send($0) }
                    try pipe.send(Array(StreamedJSON.recordsTail.utf8))
                    return [:]
                }
            }
            if result == "records" && descriptor.sectionBy == nil {
                // The page's bytes go out as the engine wrote them.
                let records = try await store.reads.fetchJSONBytes(descriptor)
                var buffer = ByteBufferAllocator().buffer(capacity: records.count + 16)
                buffer.writeString(StreamedJSON.recordsHead)
                buffer.writeBytes(records)
                buffer.writeString(StreamedJSON.recordsTail)
                return Response(
                    status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
            }
            return JSONResponse.make(try await run())
        }
        // Taken before the first read, so that no commit falls between.
        let version = store.reads.commitCount
        // Validate first: an error must be a status, not a broken stream.
        let first = try await run()
        return JSONResponse.stream(context, deadline: deadline(context), metrics: metrics) { write in
            var sent: String?
            // Only a result that changed goes out (a commit elsewhere in the
            // store, or of job bookkeeping, may leave it as it was).
            func send(_ text: String) async throws {
                guard text != sent else { return }
                try await write(StreamedJSON.watchEvent(token: try await store.reads.latestToken(), result: text))
                sent = text
            }
            try await send(first)
            // The next result as soon as a commit comes (DESIGN §11: no fixed
            // pause); the commits that come while it is computed are
            // coalesced into the one after it.
            for await _ in store.reads.commits(after: version) {
                if let dropped = Self.dropped(descriptor.entity, of: store) { return try await write(dropped) }
                try await send(try await run())
            }
        }
    }

    /// A live fetch with `"changes": true` (DESIGN §11): a `result` event (or,
    /// with `since`, none), then a `changes` event for each batch of commits
    /// that changed the result, computed from the history.
    func changes(
        _ body: FetchBody, descriptor: FetchDescriptor, result: String, store: any StoreBackend,
        context: StoreRequestContext
    ) async throws -> Response {
        guard body.watch == true, body.changes == true else {
            throw APIError(
                .invalidArgument,
                body.changes == true
                    ? "changes streams a live fetch: give \"watch\": true with it"
                    : "since resumes a live fetch with changes: give \"watch\": true and \"changes\": true with it")
        }
        guard result == "records" else {
            throw APIError(.invalidArgument, "changes streams records: result must be records (or left out)")
        }
        let feed = try store.reads.resultFeed(descriptor)
        // Taken before the first read, so that no commit falls between.
        let version = store.reads.commitCount
        var first: ByteBuffer?
        var hold: LiveStarts.Hold?
        if let since = body.since {
            do {
                try await feed.resume(after: try HistoryToken.parseWhole(since, for: "since"))
            } catch let error as DepotError where error.code == .historyExpired {
                return JSONResponse.stream(context, deadline: deadline(context), metrics: metrics) { write in
                    try await write(Self.line(ChangeEvent.historyExpired(error.message)))
                }
            }
        } else {
            // Read once for the streams that open on it with no commit between.
            let (start, shared, held) = try await liveStarts.start(
                store: store, descriptor: descriptor, version: version
            ) {
                let (token, records) = try await feed.start()
                var line = ByteBuffer()
                line.writeString(StreamedJSON.resultEvent(token: token, records: records))
                return LiveStarts.Start(state: feed.started!, line: line)
            }
            feed.start(from: start.state)
            first = start.line
            hold = held
            if shared { metrics.liveResultShared() }
        }
        let resumed = first == nil
        return JSONResponse.stream(context, head: first, deadline: deadline(context), metrics: metrics) {
            [hold] write in
            // The shared first result is kept while this stream lasts.
            defer { withExtendedLifetime(hold) {} }
            /// The changes since the last event, if any; false once the history under it was pruned.
            func send() async throws -> Bool {
                do {
                    let changes = try await feed.changes()
                    if !changes.isEmpty { try await write(StreamedJSON.changesEvent(changes)) }
                    return true
                } catch let error as DepotError where error.code == .historyExpired {
                    try await write(Self.line(ChangeEvent.historyExpired(error.message)))
                    return false
                }
            }
            // After since: the changes after the token, at once.
            if resumed, try await !send() { return }
            // As soon as a commit comes; the commits that come while an
            // event is computed are coalesced into the next one.
            for await _ in store.reads.commits(after: version) {
                if let dropped = Self.dropped(descriptor.entity, of: store) { return try await write(dropped) }
                guard try await send() else { return }
            }
        }
    }

    /// The last event of a live fetch whose entity was dropped (issue 51:
    /// such streams stayed open, waiting for commits that never came); `nil`
    /// while it is there. A drop wakes the store's waiters as a commit does.
    static func dropped(_ entity: String, of store: any StoreBackend) -> String? {
        guard (try? store.reads.entity(entity)) == nil else { return nil }
        return line(
            ChangeEvent(
                type: "entity_dropped",
                message: "entity \(JSONText.quoted(entity)) was dropped from store \(JSONText.quoted(store.name)); "
                    + "this live fetch ends"))
    }

    func aggregate(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(AggregateBody.self, from: request, limit: config.maxRequestBytes)
        var functions: [AggregateFunction]?
        if let names = body.functions {
            functions = try names.map { name in
                guard let f = AggregateFunction(rawValue: name) else {
                    throw APIError(.invalidArgument, "\(JSONText.quoted(name)) is not one of count, sum, avg, min, max")
                }
                return f
            }
        }
        let result = try await store.reads.aggregate(
            AggregateRequest(
                entity: context.parameters.get("entity") ?? "", field: body.field, functions: functions,
                groupBy: body.groupBy ?? [], where: body.where,
                arguments: try JSONValue.scalars(body.arguments, key: "arguments")))
        let rows = result.rows.map { row -> [String: JSONValue] in
            var object: [String: JSONValue] = [:]
            if !result.groupBy.isEmpty {
                object["group"] = .object(
                    Dictionary(zip(result.groupBy, row.groups.map(JSONValue.init)), uniquingKeysWith: { a, _ in a }))
            }
            for (f, v) in zip(result.functions, row.values) { object[f.rawValue] = JSONValue(v) }
            return object
        }
        return try JSONResponse.encode(AggregateAnswer(rows: rows))
    }

    func duplicates(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(DuplicatesBody.self, from: request, limit: config.maxRequestBytes)
        let entity = context.parameters.get("entity") ?? ""
        let arguments = try JSONValue.scalars(body.arguments, key: "arguments")
        // Errors in the request are statuses, before the stream starts.
        try store.reads.checkDuplicates(
            entity: entity, by: body.by, where: body.where, arguments: arguments,
            limit: body.limit)
        // The groups go out as they are found, a megabyte at a time: memory
        // holds a few chunks of the answer, whatever its size.
        return BytePipe.response(contentType: "application/json", deadline: deadline(context), metrics: metrics) {
            pipe in
            let out = Mutex<(bytes: [UInt8], groups: Int)>((Array(StreamedJSON.groupsHead.utf8), 0))
            try await store.reads.duplicates(
                entity: entity, by: body.by, where: body.where, arguments: arguments,
                limit: body.limit
            ) { g in
                let text = StreamedJSON.group(g)
                try out.withLock { out in
                    if out.groups > 0 { out.bytes.append(UInt8(ascii: ",")) }
                    out.bytes += text.utf8
                    out.groups += 1
                    if out.bytes.count >= 1 << 20 {
                        try out.bytes.withUnsafeBytes { try pipe.send($0) }
                        out.bytes.removeAll(keepingCapacity: true)
                    }
                }
            }
            try out.withLock { out in
                out.bytes += StreamedJSON.groupsTail.utf8
                try out.bytes.withUnsafeBytes { try pipe.send($0) }
            }
            return [:]
        }
    }

    /// `POST .../export`: the records that `where` selects, as CSV or
    /// NDJSON, streamed from one read snapshot as the engine writes them
    /// (no job, no file in between); the number of records comes last, in
    /// the `Depot-Records` trailer. A client that hangs up ends the read.
    func export(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let body = try await JSONBody.decode(ExportBody.self, from: request, limit: config.maxRequestBytes)
        let entity = context.parameters.get("entity") ?? ""
        _ = try store.reads.entity(entity)
        let descriptor = try body.descriptor(entity: entity)
        let format = try body.recordFormat()
        // Errors in the request are statuses, before the stream starts.
        try store.reads.check(descriptor)
        let type = format == .csv ? "text/csv; charset=utf-8" : "application/x-ndjson"
        return BytePipe.response(
            contentType: type, trailer: Self.recordsTrailer, deadline: deadline(context), metrics: metrics
        ) { pipe in
            let count = try await store.reads.export(descriptor, as: format, write: { try pipe.send($0) })
            return [HTTPField.Name(Self.recordsTrailer)!: String(count)]
        }
    }

    static let recordsTrailer = "Depot-Records"

    /// The changes a history page holds at most, unless `max_changes` says.
    static let pageChanges = 10_000

    func history(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        let q = request.uri.queryParameters
        var after = try q.get("after").map { try HistoryToken.parse(String($0)) }
        let entity = q.get("entity").map { String($0) }
        let author = q.get("author").map { String($0) }
        if let entity { _ = try store.reads.entity(entity) }
        var limit = 100
        if let text = q.get("limit") {
            limit = try QueryCount.parse(text, name: "limit", minimum: 1, cap: 10_000)
        }
        // A page holds at most so many changes: a larger transaction comes
        // in parts, each ending at a token inside it (issue #35).
        var maxChanges = Self.pageChanges
        if let text = q.get("max_changes") {
            maxChanges = try QueryCount.parse(text, name: "max_changes", minimum: 1, cap: 100_000)
        }
        // A consumer reads after its token; reading does not move it. Inside
        // a transaction a page cut, it goes on after that page's token.
        if let consumer = q.get("consumer").map({ String($0) }) {
            let token = try await store.reads.consumer(consumer).token
            if let after, after.isWhole || after.wholeThrough < token.id {
                throw APIError(
                    .invalidArgument,
                    "give consumer or after, not both: a consumer reads after its own token "
                        + "(after only goes on inside a transaction a page cut, with that page's last token)")
            }
            if q.get("follow") != "true" {
                let page =
                    after == nil
                    ? try await store.reads.history(
                        consumer: consumer, entity: entity, author: author, limit: limit,
                        maxChanges: maxChanges)
                    : try await store.reads.history(
                        after: after, entity: entity, author: author, limit: limit,
                        maxChanges: maxChanges)
                return JSONResponse.make(StreamedJSON.transactionPage(page))
            }
            // Checks that it exists and is not lost, so that errors are statuses.
            _ = try await store.reads.history(
                consumer: consumer, entity: entity, author: author, limit: 1, maxChanges: 1)
            after = after ?? token
        }
        if q.get("follow") == "true" {
            // Check the token before the stream starts, so that errors are statuses.
            _ = try await store.reads.history(after: after, entity: entity, author: author, limit: 1, maxChanges: 1)
            return JSONResponse.stream(context, deadline: deadline(context), metrics: metrics) {
                [after, maxChanges] write in
                for try await t in store.reads.followHistory(
                    after: after, entity: entity, author: author, maxChanges: maxChanges)
                {
                    try await write(StreamedJSON.transaction(t))
                }
            }
        }
        let page = try await store.reads.history(
            after: after, entity: entity, author: author, limit: limit,
            maxChanges: maxChanges)
        return JSONResponse.make(StreamedJSON.transactionPage(page))
    }

    /// `POST /v1/jobs`: the job, refused with `400` (or `404`) unless it can run.
    func submit(_ body: JobSubmission, _ context: DepotRequestContext) async throws -> JobRecord {
        try await jobs.submit(try await record(for: body.spec, store: body.store, context))
    }

    /// The record of a new job, its paths checked against `import_roots`
    /// and its spec against its store as running it would
    /// (``JobSpec/check(against:)``), so that nothing bad is queued.
    func record(for spec: JobSpec, store name: String, _ context: some ConnectionContext) async throws -> JobRecord {
        let store = try jobs.stores.require(name)
        var spec = spec
        switch spec {
        case .importFile(_, let path, _) where !path.isEmpty:
            spec = spec.with(path: try checkImportPath(path, readBy: context.peer))
        case .export(_, _, _, let path?, _):
            spec = spec.with(path: try checkImportPath(path, readBy: nil))
        case .backup(let path, _):
            guard store is Store else { throw JobExecutor.postgresBackup(name) }
            spec = spec.with(path: try backupPath(path, store: name))
        default:
            break
        }
        try spec.check(against: store.reads)
        if case .revert(let target, _) = spec {
            // A token never issued or pruned, a job that saved nothing, an entity without values: 4xx now.
            try await store.checkRevert(target)
        }
        let peer = context.peer
        return JobRecord(
            id: JobRecord.newID(), spec: spec, store: name,
            author: peer.map { $0.userName ?? "uid:\($0.uid)" } ?? "depotd")
    }

    /// Writes a request's body to `path` (created, 0600), synced; removes
    /// it and throws on an empty or too large body or a write that fails.
    func spool(_ body: RequestBody, to path: String) async throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw spoolFailure(errno, path: path) }
        var total: Int64 = 0
        do {
            defer { close(fd) }
            // After a refusal the body is read on (discarding, up to 64 MiB)
            // so that a client that sends all before it reads gets the answer.
            var refusal: APIError?
            var discarded = 0
            for try await chunk in body {
                if refusal != nil {
                    discarded += chunk.readableBytes
                    if discarded > 64 << 20 { break }
                    continue
                }
                total += Int64(chunk.readableBytes)
                if total > config.maxUploadBytes {
                    refusal = APIError(
                        .tooLarge, "the upload is larger than max_upload_bytes (\(config.maxUploadBytes))")
                } else if let code = chunk.withUnsafeReadableBytes({ FileOutput.write(fd, $0) }) {
                    refusal = spoolFailure(code, path: path)
                }
            }
            if let refusal { throw refusal }
            guard total > 0 else { throw APIError(.invalidArgument, "the upload is empty: send the file as the body") }
            guard fsync(fd) == 0 else { throw spoolFailure(errno, path: path) }
        } catch {
            unlink(path)
            throw error
        }
    }

    /// Why an upload could not be spooled: a full disk is the client's to
    /// know (`507 disk_full`); anything else goes to the log, and the client
    /// gets `500 io`, no errno text.
    func spoolFailure(_ code: Int32, path: String) -> APIError {
        if code == ENOSPC || code == EDQUOT {
            return APIError(
                .diskFull,
                "the daemon's disk is full, so the upload was not kept; "
                    + "free space under state_dir and send it again")
        }
        logger.error(
            "an upload cannot be spooled",
            metadata: [
                LogKey.path: "\(path)", LogKey.errno: "\(code)",
                LogKey.error: "\(String(cString: strerror(code)))"
            ])
        return APIError(.io, "the daemon could not write the upload to its spool; see its log")
    }

    /// A path the daemon may read (or write): under one of `import_roots`
    /// once resolved whole (`realpath`: a link anywhere in it, the last
    /// component included, counts where it leads, so a link that leaves the
    /// roots is refused), and, for a file to read, one that `peer` could
    /// read itself: the daemon never reads a file for someone who could not
    /// (DESIGN §5; issue #35). A path that does not exist yet (an export's
    /// output, or an import that will fail saying so) is resolved through
    /// its folder; a dangling link is refused.
    func checkImportPath(_ path: String, readBy peer: Peer?) throws -> String {
        guard path.hasPrefix("/") else {
            throw APIError(.invalidArgument, "the path must be absolute: \(path)")
        }
        let candidate: String
        let isLink = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil
        if let real = Self.realPath(path) {
            candidate = real
        } else if isLink {
            throw APIError(.forbidden, "\(path) is a symbolic link to nothing; name the file itself")
        } else {
            let url = URL(fileURLWithPath: path)
            let folder =
                Self.realPath(url.deletingLastPathComponent().path)
                ?? url.deletingLastPathComponent().standardizedFileURL.path
            candidate = (folder == "/" ? "" : folder) + "/" + url.lastPathComponent
        }
        let roots = config.importRoots.map { Self.realPath($0) ?? URL(fileURLWithPath: $0).standardizedFileURL.path }
        guard roots.contains(where: { candidate == $0 || candidate.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") })
        else {
            throw APIError(
                .forbidden,
                "\(path) is not under an import root ("
                    + (config.importRoots.isEmpty ? "none are configured" : config.importRoots.joined(separator: ", "))
                    + (candidate != path ? "; it leads to \(candidate)" : "")
                    + "); upload the file instead, e.g. depotctl import FILE, or add a root to import_roots")
        }
        if let peer, peer.uid != 0, peer.uid != geteuid(),
            let attributes = try? FileManager.default.attributesOfItem(atPath: candidate),
            !Self.canRead(attributes, peer: peer)
        {
            throw APIError(
                .forbidden,
                "\(path) cannot be read by \(peer.description), so the daemon does not read "
                    + "it for them; make it readable to them, or upload it (depotctl import FILE)")
        }
        return candidate
    }

    /// Where a backup of `store` goes (DESIGN §20): `backup_dir` when the
    /// request names no path; else the file named, or a new file in the
    /// folder named, which must be under `backup_dir` or an import root once
    /// resolved (the daemon writes only where it may read), not in
    /// `state_dir` outside `backup_dir`, and must not exist: a backup never
    /// overwrites.
    func backupPath(_ path: String?, store: String) throws -> String {
        guard let path else { return Self.newBackupPath(folder: config.backupDir, store: store) }
        let name = String(Self.newBackupPath(folder: "", store: store).dropFirst())
        guard path.hasPrefix("/") else {
            throw APIError(.invalidArgument, "a backup's path must be absolute: \(path)")
        }
        var isFolder: ObjCBool = false
        var target = path
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) {
            // A file there is a conflict, told only once the place is
            // allowed (below): a 409 elsewhere would tell any client which
            // files exist where it may not read.
            if isFolder.boolValue { target = (path.hasSuffix("/") ? path : path + "/") + name }
        } else if (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil {
            throw APIError(.forbidden, "\(path) is a symbolic link to nothing; name a new file")
        }
        let url = URL(fileURLWithPath: target)
        guard let folder = Self.realPath(url.deletingLastPathComponent().path) else {
            throw APIError(
                .invalidArgument, "\(url.deletingLastPathComponent().path) is not a folder: a backup goes into one")
        }
        let candidate = (folder == "/" ? "" : folder) + "/" + url.lastPathComponent
        func resolved(_ root: String) -> String {
            let path = Self.realPath(root) ?? URL(fileURLWithPath: root).standardizedFileURL.path
            return path.hasSuffix("/") ? path : path + "/"
        }
        // Never among the daemon's own files (its stores, their journals,
        // its job records), even under an import root that holds them: a
        // file named like a store's journal would be read as one.
        if candidate.hasPrefix(resolved(config.stateDir)) && !candidate.hasPrefix(resolved(config.backupDir)) {
            throw APIError(
                .forbidden,
                "\(path) is in the daemon's state_dir (\(config.stateDir)), beside its stores; "
                    + "leave the path out for backup_dir")
        }
        let roots = ([config.backupDir] + config.importRoots).map(resolved)
        guard roots.contains(where: { candidate.hasPrefix($0) }) else {
            throw APIError(
                .forbidden,
                "\(path) is not under backup_dir (\(config.backupDir)) or an import root"
                    + (config.importRoots.isEmpty ? "" : " (" + config.importRoots.joined(separator: ", ") + ")")
                    + "; leave the path out for backup_dir")
        }
        if FileManager.default.fileExists(atPath: candidate) {
            throw APIError(.conflict, "\(path) exists: a backup never overwrites a file; choose another name")
        }
        return candidate
    }

    /// A new backup's file in `folder`: `STORE-TIME.sqlite`, the time in
    /// compact UTC to the millisecond (`travel-20261129T081500123Z.sqlite`);
    /// a second name in the same millisecond gets `-2`, `-3`… (the API
    /// fuzzing submitted backups that fast, and the later ones failed on a
    /// name taken).
    static func newBackupPath(folder: String, store: String) -> String {
        let time = Timestamp.now().filter { $0 != "-" && $0 != ":" && $0 != "." }
        let n = lastBackupName.withLock { last -> Int in
            last = last.time == time ? (time, last.n + 1) : (time, 1)
            return last.n
        }
        return folder + "/\(store)-" + time + (n > 1 ? "-\(n)" : "") + ".sqlite"
    }

    /// The time of the last backup name given, and how many were given in it.
    private static let lastBackupName = Mutex<(time: String, n: Int)>(("", 0))

    /// `path` with every link and `.`/`..` resolved, or `nil` (errno set)
    /// when some part of it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether `peer` may read a file of these attributes, by its mode bits.
    static func canRead(_ attributes: [FileAttributeKey: Any], peer: Peer) -> Bool {
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0
        let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value
        let group = (attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value
        if owner == peer.uid { return mode & 0o400 != 0 }
        if let group, peer.groups.contains(group) { return mode & 0o040 != 0 }
        return mode & 0o004 != 0
    }

    /// Upload import: the body streams to a spool file, synced to disk,
    /// then an import job reads it like any file (durable and resumable).
    func upload(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let q = request.uri.queryParameters
        // The settings through the readers of every job's (JobSetting).
        var options = ImportOptions()
        guard
            let format = try JobSetting.read(
                "format", q.get("format").map { String($0) } ?? "csv",
                JobSetting.importFormat)
        else {
            throw APIError(
                .invalidArgument,
                "an upload's format must be csv, tsv, ndjson or json: "
                    + "it has no file name to tell it by")
        }
        options.format = format
        if let policy = q.get("on_conflict") {
            options.onConflict = try JobSetting.read("on_conflict", String(policy), JobSetting.conflictPolicy)
        }
        if let limit = q.get("max_rejects") {
            options.maxRejects = try JobSetting.read("max_rejects", String(limit), JobSetting.rejectLimit)
        }
        if let references = q.get("references") {
            options.deferReferences = try JobSetting.read("references", String(references), JobSetting.references)
        }
        // The file's dialect, as `depotctl infer` reports it; nulls as one
        // comma-separated list.
        var dialect = JobSettings()
        dialect.delimiter = q.get("delimiter").map { String($0) }
        dialect.quote = q.get("quote").map { String($0) }
        dialect.escape = q.get("escape").map { String($0) }
        dialect.quotes = q.get("quotes").map { String($0) }
        dialect.encoding = q.get("encoding").map { String($0) }
        dialect.nulls = q.get("nulls").map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        if let h = q.get("header") { dialect.header = try JobSetting.read("header", String(h), JobSetting.flag) }
        if let c = q.get("columns") {
            guard let map = try? JSONDecoder().decode([String: String].self, from: Data(String(c).utf8)) else {
                throw APIError(
                    .invalidArgument, "columns must be a JSON object of column to field: {\"Trip ID\": \"id\"}")
            }
            dialect.columns = map
        }
        if let s = q.get("skip_initial_space") {
            dialect.skipInitialSpace = try JobSetting.read("skip_initial_space", String(s), JobSetting.flag)
        }
        try options.read(dialectOf: dialect)
        if let create = q.get("create"), try JobSetting.read("create", String(create), JobSetting.flag) {
            return try await uploadCreating(request, context, explicit: options, dialect: dialect)
        }
        let spec = JobSpec.importFile(entity: context.parameters.get("entity") ?? "", path: "", options: options)
        // Refuse bad options before a byte is spooled.
        let record = try await record(for: spec, store: context.parameters.get("store") ?? "", context)
        let spool = config.stateDir + "/spool"
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        let path = "\(spool)/\(record.id).\(format.rawValue)"
        try await self.spool(request.body, to: path)
        return try await submit(record, spooledAt: path)
    }

    /// Submits an upload's import job, its file spooled at `path` (removed
    /// if the job cannot be queued); `202` with the job.
    func submit(_ record: JobRecord, spooledAt path: String) async throws -> Response {
        var record = record
        record.spec = record.spec?.with(path: path)
        do {
            return try JSONResponse.encode(try await jobs.submit(record), status: .accepted)
        } catch {
            unlink(path)
            throw error
        }
    }

    /// An upload with `create=true` (DESIGN §18): the file is spooled and
    /// inferred (``SchemaInference``); an entity of that name that does not
    /// exist is created from it over the API; then the file is imported with
    /// the dialect inferred, each setting the query gives taking precedence.
    func uploadCreating(
        _ request: Request, _ context: StoreRequestContext, explicit: ImportOptions, dialect: JobSettings
    ) async throws -> Response {
        let q = request.uri.queryParameters
        let store = context.store
        let name = context.parameters.get("entity") ?? ""
        let spool = config.stateDir + "/spool"
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        let spooled = "\(spool)/create-\(UUID().uuidString)"
        try await self.spool(request.body, to: spooled)
        do {
            var inferOptions = InferOptions(entity: name, fileName: q.get("name").map { String($0) })
            if q.get("format") != nil { inferOptions.format = explicit.format }
            inferOptions.temporaryFolder = spool
            let inference = try await Self.infer(path: spooled, options: inferOptions)
            if !store.reads.entities.contains(where: { $0.name == name }) {
                _ = try await store.putEntity(try inference.entitySchema(name: name))
                logger.info(
                    "entity created from an upload",
                    metadata: [LogKey.store: "\(store.name)", "entity": "\(name)", "rows": "\(inference.rows)"])
            }
            var options = inference.importOptions
            if q.get("format") != nil { options.format = explicit.format }
            options.onConflict = explicit.onConflict
            options.maxRejects = explicit.maxRejects
            options.deferReferences = explicit.deferReferences
            try options.read(dialectOf: dialect)
            let spec = JobSpec.importFile(entity: name, path: "", options: options)
            let record = try await record(for: spec, store: store.name, context)
            let path = "\(spool)/\(record.id).\(options.format.rawValue)"
            guard rename(spooled, path) == 0 else { throw spoolFailure(errno, path: path) }
            return try await submit(record, spooledAt: path)
        } catch {
            unlink(spooled)
            throw error
        }
    }

    /// `GET /v1/stores/{store}/check`: the references that point at nothing
    /// (DESIGN §12), counted per to-one, the first `limit` (default 100) listed.
    func check(_ request: Request, _ context: StoreRequestContext) async throws -> Response {
        let store = context.store
        var limit = 100
        if let text = request.uri.queryParameters.get("limit") {
            limit = try QueryCount.parse(text, name: "limit", minimum: 0, cap: 10_000)
        }
        let check = try await store.reads.danglingReferences(limit: limit)
        return try JSONResponse.encode(
            ReferenceCheck(
                total: check.total,
                relationships: check.relationships.map {
                    ReferenceCheck.Relationship(
                        entity: $0.entity, relationship: $0.relationship, to: $0.target, dangling: $0.dangling)
                },
                dangling: check.dangling.map {
                    ReferenceCheck.Dangling(
                        entity: $0.entity, identifier: JSONValue($0.identifier), relationship: $0.relationship,
                        to: $0.target, reference: JSONValue($0.reference))
                }))
    }
}
