import Foundation
import GRDB

/// Imports a file into an entity of a store: streaming, saving periodically,
/// resuming exactly after a crash.
///
/// Each save commits, in one transaction, a batch of records, their history
/// and the job's checkpoint (input fingerprint, byte offset, line, counters,
/// rejects file length). A job restarted under the same id resumes after its
/// last save, so after any number of kills the store, the history and the
/// counters equal one clean run's. While a batch is saved, the next one is
/// parsed, so the two cores work together.
///
/// For example:
///
/// ```swift
/// let request = ImportRequest(job: "j1", entity: "Trip", path: "trips.csv", rejectsPath: "j1.rejects.ndjson")
/// let result = try await Importer.run(request, into: store) { progress in
///     print(progress.read, progress.rate)
/// }
/// ```
public enum Importer {
    /// Records per chunk handed to a save. In-file duplicates within one
    /// chunk are written once (the last wins); farther apart, the earlier
    /// version is written first (see ``WriteCounts/duplicates``). Sorted runs
    /// (``ImportOptions/sortRun``) bring the repeats of a run together.
    static let chunkSize = 2_048

    /// Runs (or resumes) an import to its end.
    ///
    /// - Parameter progress: called after every save with the counters so far.
    /// - Returns: the final counters.
    /// - Throws: ``DepotError`` when the file cannot be read, its header does
    ///   not fit the entity, its content changed since the job started, or the
    ///   rejects pass `maxRejects`; `CancellationError` when the task is
    ///   cancelled (after the current save). Saved records stay saved.
    public static func run(_ request: ImportRequest, into store: Store,
                           progress: (@Sendable (ImportProgress) -> Void)? = nil) async throws -> ImportProgress {
        let clock = ContinuousClock()
        let started = clock.now
        let entity = try store.reader.entity(request.entity)
        let options = request.options
        let saveEvery = max(1, options.saveEvery ?? store.configuration.saveEvery)
        let saveInterval = options.saveInterval ?? store.configuration.saveInterval
        let adaptive = store.configuration.adaptiveSaves && options.saveEvery == nil && options.saveInterval == nil
        /// How long the last commit took (see StoreConfiguration.adaptiveSaves).
        var lastCommit = Duration.zero
        let fingerprint = try InputFingerprint(path: request.path)

        var state: ImportCheckpoint
        if let bytes = try await store.checkpoint(job: request.job) {
            guard let saved = ImportCheckpoint.decode(bytes) else {
                throw DepotError(.database, "the checkpoint of job \(request.job) is unreadable")
            }
            guard saved.fingerprint == fingerprint else {
                throw DepotError(.invalidArgument, "the input \(request.path) changed since job \(request.job) "
                    + "started, so it cannot resume; import the new file as a new job")
            }
            if saved.progress.finished {
                progress?(saved.progress)
                try judge(saved.progress, request: request)
                return saved.progress
            }
            state = saved
        } else {
            var fresh = ImportProgress()
            fresh.bytesTotal = fingerprint.size
            let table = entity.table
            let floor = try await store.reader.read { db in
                try Int64.fetchOne(db, sql: "SELECT max(rowid) FROM \(table)") ?? 0
            }
            state = ImportCheckpoint(fingerprint: fingerprint, offset: 0, line: 1, rejectsLength: 0,
                                     rowidFloor: floor, progress: fresh)
        }
        let rejects = try RejectsFile(path: request.rejectsPath, truncateTo: state.rejectsLength)
        let batcher: any RecordBatcher = switch options.format {
        case .csv, .tsv: try CSVBatcher(request: request, entity: entity, from: state)
        case .ndjson, .json: try JSONBatcher(request: request, entity: entity, from: state)
        }
        if state.offset == 0 {
            state.offset = batcher.startOffset
            state.line = batcher.startLine
            state.lineStart = batcher.startLineStart
        }
        let policy = options.onConflict
        let deferReferences = options.deferReferences
        let job = request.job
        let floor = state.rowidFloor
        // Events at least once a second, also while a long save runs.
        let ticker = ProgressTicker(started: started, emit: progress)
        ticker.update(state.progress)
        let tickerTask = Task { await ticker.run() }
        defer { tickerTask.cancel() }

        // A parser thread reads chunks ahead into a short queue while each
        // save, one transaction, writes chunks until it has `saveEvery`
        // records or `saveInterval` has passed: saves stay large (few
        // commits of the identifier index) while memory holds a few chunks.
        // The parser sorts runs of records by identifier (SortedRun), unless
        // a record may refer to another of the same entity, which must then
        // be written first as in the file; a save ends only after a run.
        let queue = ChunkQueue(capacity: 2)
        let selfReferring = !deferReferences && entity.relationships.contains {
            if case .toOne = $0.kind { $0.target == entity.name } else { false }
        }
        let parser = ParserThread(batcher: batcher, queue: queue, chunk: min(saveEvery, Self.chunkSize),
                                  identifier: selfReferring ? nil : entity.identifier,
                                  runLength: min(options.sortRun, saveEvery))
        parser.start()
        defer { queue.close() }
        while true {
            let before = state
            let saveStarted = clock.now
            let longEnough = saveStarted + lastCommit * 8
            let outcome = try await store.save(author: request.author, job: job) { save in
                var next = before
                var rejected: [RejectsFile.Entry] = []
                var records = 0
                let deadline = clock.now + saveInterval
                var chunk: ParsedBatch
                repeat {
                    guard let item = queue.take() else { throw CancellationError() }
                    chunk = try item.get()
                    let counts = try save.write(chunk.batch, policy: policy, sourceRowidFloor: floor,
                                                deferReferences: deferReferences)
                    rejected += chunk.rejects
                    for r in counts.rejected {
                        let line = chunk.lines[r.row]
                        rejected.append(.init(line: line, text: RejectsFile.line(line, field: r.field, reason: r.reason, value: nil)))
                    }
                    next.progress.read += chunk.read
                    next.progress.inserted += counts.inserted
                    next.progress.updated += counts.updated
                    next.progress.unchanged += counts.unchanged
                    next.progress.skipped += counts.skipped
                    next.progress.duplicates += counts.duplicates
                    next.progress.rejected += chunk.rejects.count + counts.rejected.count
                    records += chunk.read
                    if chunk.boundary {
                        next.offset = chunk.endOffset
                        next.line = chunk.endLine
                        next.lineStart = chunk.endLineStart
                        next.progress.bytesRead = min(chunk.endOffset, next.progress.bytesTotal)
                        next.progress.finished = chunk.atEnd
                    }
                } while !chunk.boundary
                    || (!chunk.atEnd && ((records < saveEvery && clock.now < deadline) || (adaptive && clock.now < longEnough)))
                // In the input's order, however the records were written.
                rejected.sort { $0.line < $1.line }
                try rejects.append(rejected.map(\.text))
                next.rejectsLength = rejects.length
                next.progress.saves += 1
                try save.setCheckpoint(job: job, data: next.encoded())
                return (next, clock.now)
            }.value
            state = outcome.0
            lastCommit = clock.now - outcome.1
            state.progress.lastSaveSeconds = ProgressTicker.seconds(clock.now - saveStarted)
            state.progress.elapsed = ProgressTicker.seconds(clock.now - started)
            ticker.update(state.progress)
            progress?(state.progress)
            if case .count(let limit) = options.maxRejects, state.progress.rejected > limit {
                throw tooManyRejects(state.progress, limit: "\(limit)", request: request)
            }
            if state.progress.finished { break }
            try Task.checkCancellation()
        }
        try judge(state.progress, request: request)
        return state.progress
    }

    /// Whether a finished import failed for what it read: every record
    /// rejected (binary data, another format), or more rejects than a
    /// fractional `max_rejects` allows. The same verdict when a job that had
    /// finished its last save resumes.
    static func judge(_ p: ImportProgress, request: ImportRequest) throws {
        if p.read > 0, p.rejected == p.read {
            var first = ""
            let handle = FileHandle(forReadingAtPath: request.rejectsPath)
            defer { try? handle?.close() }
            if let head = try? handle?.read(upToCount: 4096), let end = head.firstIndex(of: 0x0A),
               let object = try? JSONSerialization.jsonObject(with: head[..<end]) as? [String: Any],
               let line = object["line"] as? Int, let reason = object["reason"] as? String {
                first = "; the first, on line \(line): \(reason)"
            }
            throw DepotError(.invalidArgument, "no record of \(request.path) could be read: all \(p.read) were "
                + "rejected\(first). Is it binary data, or in another format than \(request.options.format.rawValue)? "
                + "See \(request.rejectsPath) for each record's line and reason")
        }
        if case .fraction(let f) = request.options.maxRejects, p.read > 0, Double(p.rejected) > f * Double(p.read) {
            throw tooManyRejects(p, limit: "\(f * 100)% of \(p.read)", request: request)
        }
    }

    /// Runs (or resumes) an import as a sequence of progress events: one
    /// after each save and at least one a second; the last one has
    /// ``ImportProgress/finished`` set. Ending the iteration early (or
    /// cancelling the iterating task) cancels the import at its next save.
    ///
    /// ```swift
    /// for try await p in Importer.events(request, into: store) {
    ///     print("\(p.read) rows, \(Int(p.rate)) rows/s")
    /// }
    /// ```
    public static func events(_ request: ImportRequest, into store: Store) -> AsyncThrowingStream<ImportProgress, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    _ = try await run(request, into: store) { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    static func tooManyRejects(_ p: ImportProgress, limit: String, request: ImportRequest) -> DepotError {
        DepotError(.invalidArgument, "the import rejected \(p.rejected) records, more than max_rejects (\(limit)); "
            + "the records saved so far stay saved; see \(request.rejectsPath) for each record's line and reason")
    }
}
