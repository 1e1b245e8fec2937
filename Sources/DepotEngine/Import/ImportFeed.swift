import DepotWire
import Foundation

/// The reading side of an import, the same whichever backend writes it: the
/// job's checkpoint checked against its input, the input parsed on a thread
/// of its own into a short queue of chunks, the rejects file, progress
/// events at least once a second, and the decision of when a save ends.
///
/// A backend's import loop (``Importer/run(_:into:progress:)`` for SQLite,
/// the PostgreSQL backend's importer) opens one save after another: each
/// takes chunks (``ImportSave/take()``), writes them, adds what they did
/// (``ImportSave/add(_:_:)``) until ``ImportSave/ends(after:)``, then
/// commits the checkpoint from ``ImportSave/close()`` in the same
/// transaction; ``committed(_:started:commitEnded:)`` then moves the feed on.
// @unchecked: moved on by one import at a time, between saves; Sendable to reach the writer's thread.
package final class ImportFeed: @unchecked Sendable {
    // Used by one import loop at a time, one save after another.
    package let request: ImportRequest
    package let entity: EntitySchema
    private(set) var state: ImportCheckpoint
    let rejects: RejectsFile
    let queue: ChunkQueue
    private let ticker: ProgressTicker
    private let tickerTask: Task<Void, Never>
    private let progress: (@Sendable (ImportProgress) -> Void)?
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant
    private let saveEvery: Int
    private let saveInterval: Duration
    private let adaptive: Bool
    private var lastCommit = Duration.zero
    /// Whether a save may end inside a run once it is full (merged runs,
    /// longer than a save), not only for a waiting save.
    private let endsInsideRuns: Bool
    /// The saves waiting for the store's writer: a save of this import
    /// that has run ``yieldAfter`` ends after its current chunk.
    private let demand: WriteDemand?
    /// The shortest time a save of an import runs before it yields to a
    /// waiting save.
    static let yieldAtLeast = Duration.milliseconds(200)
    /// The longest a waiting save waits for an import's save, about,
    /// however long the store's saves may be: DESIGN's default save interval.
    static let yieldWithin = Duration.seconds(2)

    /// What starting an import comes to: a feed, or the progress of a job
    /// whose checkpoint says it had already finished.
    package enum Start {
        case feed(ImportFeed)
        case finished(ImportProgress)
    }

    /// Starts (or resumes from `checkpoint`) the reading of `request`.
    ///
    /// - Parameters:
    ///   - saveEvery, saveInterval, adaptiveSaves: the store's save settings,
    ///     which the job's own options override.
    ///   - chunk: records to a chunk at most (a backend's batch size).
    ///   - sortable: whether runs of records may be written in identifier
    ///     order (not when a record may refer to another of the same entity).
    ///   - shortFirstRun: for a job from its start, a first run of a
    ///     quarter of a chunk, the next ones growing fourfold, so that its
    ///     first save starts sooner (runs as long as a save take a while to
    ///     read and sort). A job resumed from a checkpoint starts where a
    ///     run ended and has full runs, as the clean run had there.
    ///   - floor: for a fresh job, the entity's source floor (SQLite's
    ///     greatest rowid), kept in its checkpoint.
    package static func start(
        _ request: ImportRequest, entity: EntitySchema, saveEvery storeSaveEvery: Int,
        saveInterval storeSaveInterval: Duration, adaptiveSaves: Bool, chunk: Int, sortable: Bool,
        shortFirstRun: Bool = false, checkpoint: [UInt8]?, floor: () async throws -> Int64,
        demand: WriteDemand? = nil, progress: (@Sendable (ImportProgress) -> Void)?
    ) async throws -> Start {
        let clock = ContinuousClock()
        let started = clock.now
        let options = request.options
        let saveEvery = max(1, options.saveEvery ?? storeSaveEvery)
        let fingerprint = try InputFingerprint(path: request.path)
        var state: ImportCheckpoint
        if let checkpoint {
            guard let saved = ImportCheckpoint.decode(checkpoint) else {
                throw DepotError(.database, "the checkpoint of job \(request.job) is unreadable")
            }
            guard saved.fingerprint == fingerprint else {
                throw DepotError(
                    .invalidArgument,
                    "the input \(request.path) changed since job \(request.job) "
                        + "started, so it cannot resume; import the new file as a new job")
            }
            if saved.progress.finished {
                progress?(saved.progress)
                try Importer.judge(saved.progress, request: request)
                return .finished(saved.progress)
            }
            state = saved
        } else {
            var fresh = ImportProgress()
            fresh.bytesTotal = fingerprint.size
            state = ImportCheckpoint(
                fingerprint: fingerprint, offset: 0, line: 1, rejectsLength: 0,
                rowidFloor: try await floor(), progress: fresh)
        }
        let rejects = try RejectsFile(path: request.rejectsPath, truncateTo: state.rejectsLength)
        let batcher: any RecordBatcher =
            switch options.format {
            case .csv, .tsv: try CSVBatcher(request: request, entity: entity, from: state)
            case .ndjson, .json: try JSONBatcher(request: request, entity: entity, from: state)
            }
        if state.offset == 0 {
            state.offset = batcher.startOffset
            state.line = batcher.startLine
            state.lineStart = batcher.startLineStart
        }
        // A parser thread reads chunks ahead into a short queue while each
        // save, one transaction, writes chunks until it has `saveEvery`
        // records or `saveInterval` has passed: saves stay large (few
        // commits of the identifier index) while memory holds a few chunks.
        // The parser sorts runs of records by identifier (SortedRun), unless
        // `sortable` is false; a save ends after a run, or inside one for a
        // waiting save (its checkpoint then keeps the place in the run).
        let queue = ChunkQueue(capacity: 2)
        // Merged runs (MergedRun): `sortRun` records sorted in memory at a
        // time, merged into runs of `mergeRun`, which saves end inside of;
        // else runs of `sortRun` that saves end between.
        let merging = sortable && options.sortRun > 1 && options.mergeRun > options.sortRun
        let inMemoryRun = min(options.sortRun, saveEvery)
        let runLength = merging ? options.mergeRun : inMemoryRun
        // A job's first run is short, so that its first save starts soon;
        // the next ones grow fourfold.
        let firstRunLength = shortFirstRun ? max(1, chunk / 4) : merging ? options.sortRun : nil
        let runWritten = state.runWritten ?? 0
        guard runWritten == 0 || (sortable && runLength > 1) else {
            throw DepotError(
                .invalidArgument,
                "job \(request.job) stopped inside a sorted run of its input, and this start does not "
                    + "sort runs (its options or the entity changed); import the file as a new job")
        }
        // A checkpoint from before runs were merged has no run length: its
        // run had the length runs of `sortRun` had then; and its `read`
        // left out the run's records until the run's end.
        if runWritten > 0, state.runLength == nil {
            state.runLength = ParserThread.runLength(
                after: state.progress.read, first: min(shortFirstRun ? max(1, chunk / 4) : inMemoryRun, inMemoryRun),
                full: inMemoryRun)
            state.progress.read += runWritten
        }
        let parser = ParserThread(
            batcher: batcher, queue: queue, chunk: min(saveEvery, chunk),
            identifier: sortable ? entity.identifier : nil, runLength: runLength,
            firstRunLength: firstRunLength, alreadyRead: state.progress.read - runWritten,
            firstRunWritten: runWritten, resumedRunLength: state.runLength,
            memoryRows: merging ? options.sortRun : .max,
            spillFolder: URL(fileURLWithPath: request.rejectsPath).deletingLastPathComponent().path)
        let feed = ImportFeed(
            request: request, entity: entity, state: state, rejects: rejects, queue: queue,
            started: started, saveEvery: saveEvery,
            saveInterval: options.saveInterval ?? storeSaveInterval,
            adaptive: adaptiveSaves && options.saveEvery == nil && options.saveInterval == nil,
            endsInsideRuns: merging, demand: demand, progress: progress)
        parser.start()
        return .feed(feed)
    }

    private init(
        request: ImportRequest, entity: EntitySchema, state: ImportCheckpoint, rejects: RejectsFile,
        queue: ChunkQueue, started: ContinuousClock.Instant, saveEvery: Int, saveInterval: Duration,
        adaptive: Bool, endsInsideRuns: Bool, demand: WriteDemand?,
        progress: (@Sendable (ImportProgress) -> Void)?
    ) {
        self.endsInsideRuns = endsInsideRuns
        self.request = request
        self.entity = entity
        self.state = state
        self.rejects = rejects
        self.queue = queue
        self.started = started
        self.saveEvery = saveEvery
        self.saveInterval = saveInterval
        self.adaptive = adaptive
        self.demand = demand
        self.progress = progress
        // Events at least once a second, also while a long save runs.
        let ticker = ProgressTicker(started: started, emit: progress)
        ticker.update(state.progress)
        self.ticker = ticker
        // Unstructured: it lives as long as the feed, which cancels it when the import ends.
        self.tickerTask = Task { await ticker.run() }
    }

    deinit {
        tickerTask.cancel()
        queue.close()
    }

    /// The next save's accounting, from where the last one left the import.
    package func beginSave() -> ImportSave {
        let now = clock.now
        return ImportSave(
            feed: self, next: state, started: now, deadline: now + saveInterval,
            longEnough: now + lastCommit * 8, yieldAfter: yieldAfter)
    }

    /// How long the next save runs before it ends for a waiting save: so
    /// that the wait, with the commit that follows (taken as twice the
    /// last one) and a chunk's writing, stays within the save interval or
    /// ``yieldWithin``, the shorter (DESIGN §16: a save waits at most for
    /// the job's current save) — and no shorter, since each commit of an
    /// import costs it a write of every page its records dirtied (one
    /// client saving in a loop would otherwise make it commit several
    /// times a second). At least ``yieldAtLeast``.
    private var yieldAfter: Duration {
        request.options.yieldAfter
            ?? max(
                ImportFeed.yieldAtLeast,
                min(saveInterval, ImportFeed.yieldWithin) - lastCommit * 2 - .milliseconds(100))
    }

    /// Moves the import on after a save committed: its checkpoint's state,
    /// the commit's duration (for adaptive saves), the progress event, the
    /// max_rejects check.
    ///
    /// - Returns: whether the input is read to its end.
    package func committed(_ save: ImportSave, commitEnded: ContinuousClock.Instant) throws -> Bool {
        state = save.next
        lastCommit = clock.now - commitEnded
        state.progress.lastSaveSeconds = ProgressTicker.seconds(clock.now - save.started)
        state.progress.elapsed = ProgressTicker.seconds(clock.now - started)
        ticker.update(state.progress)
        progress?(state.progress)
        if case .count(let limit) = request.options.maxRejects, state.progress.rejected > limit {
            throw Importer.tooManyRejects(state.progress, limit: "\(limit)", request: request)
        }
        return state.progress.finished
    }

    /// The end of the import: the last progress, judged (nothing readable,
    /// too many rejects).
    package func finish() throws -> ImportProgress {
        try Importer.judge(state.progress, request: request)
        return state.progress
    }

    /// Where ``ImportSave/takeWaiting()`` waits for the parser.
    fileprivate static let waiting = DispatchQueue(label: "depot-import-wait", attributes: .concurrent)

    fileprivate var clockNow: ContinuousClock.Instant { clock.now }
    fileprivate var saveSize: Int { saveEvery }
    fileprivate var isAdaptive: Bool { adaptive }
    fileprivate var mayEndInsideRuns: Bool { endsInsideRuns }
    fileprivate var isWanted: Bool { demand?.isWaiting ?? false }
}

/// One save's share of an import: the chunks it took and what they did.
// @unchecked: holds the feed (above) and is used by one save, on the writer's thread.
package struct ImportSave: @unchecked Sendable {
    // Used inside one save, by one task.
    private let feed: ImportFeed
    /// Where the import will stand once this save commits.
    private(set) var next: ImportCheckpoint
    let started: ContinuousClock.Instant
    private let deadline: ContinuousClock.Instant
    private let longEnough: ContinuousClock.Instant
    private let yieldAfter: Duration
    private var rejected: [RejectsFile.Entry] = []
    private var records = 0

    fileprivate init(
        feed: ImportFeed, next: ImportCheckpoint, started: ContinuousClock.Instant,
        deadline: ContinuousClock.Instant, longEnough: ContinuousClock.Instant, yieldAfter: Duration
    ) {
        self.yieldAfter = yieldAfter
        self.feed = feed
        self.next = next
        self.started = started
        self.deadline = deadline
        self.longEnough = longEnough
    }

    /// The next chunk; waits for the parser.
    ///
    /// - Throws: the parser's error, or `CancellationError` when the import
    ///   was stopped.
    package func take() throws -> ImportChunk {
        guard let item = feed.queue.take() else { throw CancellationError() }
        return ImportChunk(parsed: try item.get())
    }

    /// The next chunk, for a save that runs in Swift concurrency (the
    /// PostgreSQL backend's): the wait for the parser happens on a thread of
    /// its own, not on one of the few threads every task shares.
    package func takeWaiting() async throws -> ImportChunk {
        let queue = feed.queue
        let item: Result<ParsedBatch, any Error>? = await withCheckedContinuation { continuation in
            ImportFeed.waiting.async { continuation.resume(returning: queue.take()) }
        }
        guard let item else { throw CancellationError() }
        return ImportChunk(parsed: try item.get())
    }

    /// Adds what writing `chunk` did.
    package mutating func add(_ chunk: ImportChunk, _ counts: WriteCounts) {
        let chunk = chunk.parsed
        rejected += chunk.rejects
        for r in counts.rejections {
            let line = chunk.lines[r.row]
            rejected.append(
                .init(line: line, text: RejectsFile.line(line, field: r.field, reason: r.reason, value: nil)))
        }
        next.progress.counters.add(counts.counters)
        // Records read: a sorted run's as they are handed out (its last
        // chunk brings the rest: the records refused while parsing), so
        // that a save ending inside the run counts what it wrote.
        let counted = next.runWritten ?? 0
        next.progress.read += chunk.boundary ? chunk.read - counted : chunk.runHandedOut - counted
        next.progress.rejected += chunk.rejects.count
        // Counted as handed out (a run's `read` comes with its last chunk),
        // so that a save may fill up inside a merged run.
        records += chunk.batch.count + chunk.rejects.count
        // Inside a run, the checkpoint keeps the run's start (`offset`,
        // moved at its last chunk only) and the rows of it written so far.
        next.runWritten = chunk.boundary ? nil : chunk.runHandedOut
        next.runLength = chunk.boundary ? nil : chunk.runLength
        if chunk.boundary {
            next.offset = chunk.endOffset
            next.line = chunk.endLine
            next.lineStart = chunk.endLineStart
            next.progress.bytesRead = min(chunk.endOffset, next.progress.bytesTotal)
            next.progress.finished = chunk.atEnd
        }
    }

    /// Whether the save ends after `chunk`: for a waiting save, once it has
    /// run ``ImportFeed``'s `yieldAfter`, wherever the chunk ends; else at
    /// the input's end, or once it holds `saveEvery` records or has run
    /// `saveInterval` (and, with adaptive saves, eight times the last
    /// commit) — at a place in the input between records, or, with merged
    /// runs, wherever the chunk ends.
    package func ends(after chunk: ImportChunk) -> Bool {
        let chunk = chunk.parsed
        let now = feed.clockNow
        // A save waits for the writer: it gets it after this chunk, also
        // inside a sorted run (the checkpoint keeps the place in the run).
        if now - started >= yieldAfter, feed.isWanted { return true }
        guard chunk.boundary || feed.mayEndInsideRuns else { return false }
        if chunk.atEnd { return true }
        let full = records >= feed.saveSize || now >= deadline
        return full && !(feed.isAdaptive && now < longEnough)
    }

    /// Writes the save's rejects, in the input's order however the records
    /// were written, and counts the save.
    ///
    /// - Returns: the checkpoint to commit with the save's records.
    package mutating func close() throws -> [UInt8] {
        rejected.sort { $0.line < $1.line }
        try feed.rejects.append(rejected.map(\.text))
        next.rejectsLength = feed.rejects.length
        next.progress.saves += 1
        return try next.encoded()
    }

    /// The job the save belongs to, and its records' source floor.
    package var job: String { feed.request.job }
    package var rowidFloor: Int64 { next.rowidFloor }
}

/// A chunk of parsed records, as a backend writes it.
package struct ImportChunk: Sendable {
    let parsed: ParsedBatch
    package var batch: RecordBatch { parsed.batch }
    /// Whether the input ends with this chunk: no chunk comes after it.
    package var isLast: Bool { parsed.atEnd }
}
