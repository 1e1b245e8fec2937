import DepotWire
import Foundation

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
    /// Runs (or resumes) an import to its end, on any backend.
    ///
    /// The feed (``ImportFeed``) reads and parses the file on a thread of
    /// its own; while a save writes a batch, the next one is taken and made
    /// ready (``StoreBackend/prepare(_:_:)``) on another thread, so that the
    /// store's work on one batch and the preparing of the next overlap. A
    /// batch taken ahead when a save ends goes to the next save; until a
    /// save adds it, it is in no checkpoint, so a stop there reads it again.
    ///
    /// - Parameter progress: called after every save with the counters so far.
    /// - Returns: the final counters.
    /// - Throws: ``DepotError`` when the file cannot be read, its header does
    ///   not fit the entity, its content changed since the job started, or the
    ///   rejects pass `maxRejects`; `CancellationError` when the task is
    ///   cancelled (after the current save). Saved records stay saved.
    package static func run<Backend: StoreBackend>(
        _ request: ImportRequest, into store: Backend,
        progress: (@Sendable (ImportProgress) -> Void)? = nil
    ) async throws -> ImportProgress {
        let settings = store.settings
        let entity = try settings.schema.entity(request.entity)
        let deferReferences = request.options.deferReferences
        // A record that may refer to another of the same entity must be
        // written after it, as in the file: no sorted runs then.
        let selfReferring =
            !deferReferences
            && entity.relationships.contains {
                if case .toOne = $0.kind { $0.target == entity.name } else { false }
            }
        var request = request
        let sized: Int
        let adaptive: Bool
        switch settings.importBatches {
        case .rows(let rows):
            (sized, adaptive) = (rows, settings.adaptiveSaves)
        case .perSave(let rows):
            // Runs as long as a save: each batch is then a narrow band of
            // the identifier's order, and the inserts of a save sweep the
            // key's index once instead of once a batch. A run is cut into
            // even batches of about `rows` (not three full ones and a small
            // rest, which would cost a round of statements of its own and
            // leave the next batch no time to be made ready).
            let run = max(1, request.options.saveEvery ?? settings.saveEvery)
            if request.options.sortRun > 0 { request.options.sortRun = run }
            // Each save sorted whole, in memory, as its batches are sent.
            request.options.mergeRun = 0
            let batches = max(1, (run + rows / 2) / rows)
            (sized, adaptive) = ((run + batches - 1) / batches, false)
        }
        let chunk = request.options.chunkRows ?? sized
        let perSave = if case .perSave = settings.importBatches { true } else { false }
        let start = try await ImportFeed.start(
            request, entity: entity, saveEvery: settings.saveEvery, saveInterval: settings.saveInterval,
            adaptiveSaves: adaptive, chunk: chunk, sortable: !selfReferring, shortFirstRun: perSave,
            checkpoint: try await store.checkpoint(job: request.job),
            floor: { try await store.sourceFloor(of: entity) }, demand: settings.demand, progress: progress)
        let feed: ImportFeed
        switch start {
        case .finished(let done): return done
        case .feed(let started): feed = started
        }
        let options = BatchOptions(
            policy: request.options.onConflict, deferReferences: deferReferences,
            source: ImportSource(floor: feed.beginSave().rowidFloor))
        let clock = ContinuousClock()
        let ahead = Ahead<Backend.Context.Prepared>()
        defer { ahead.task?.cancel() }
        @Sendable func ready(_ save: ImportSave) -> Task<(ImportChunk, Backend.Context.Prepared), any Error> {
            // Detached: the next batch is read ahead while the save writes this one; the save awaits it.
            Task.detached {
                let chunk = try await save.takeWaiting()
                return (chunk, try store.prepare(chunk.batch, options))
            }
        }
        while true {
            let begun = feed.beginSave()
            let outcome = try await store.withSave(author: request.author, job: request.job) { save in
                var this = begun
                var chunk: ImportChunk
                repeat {
                    let taken = ahead.task ?? ready(this)
                    let prepared: Backend.Context.Prepared
                    (chunk, prepared) = try await taken.value
                    ahead.task = chunk.isLast ? nil : ready(this)
                    let counts = try await save.write(prepared)
                    this.add(chunk, counts)
                } while !this.ends(after: chunk)
                try await save.setCheckpoint(job: this.job, data: try this.close())
                return (this, clock.now)
            }.value
            if try feed.committed(outcome.0, commitEnded: outcome.1) { break }
            try Task.checkCancellation()
        }
        return try feed.finish()
    }

    /// The batch being taken and made ready ahead of the save that writes it.
    // @unchecked: set and taken by the import's one save loop, one save at a time.
    private final class Ahead<Prepared: Sendable>: @unchecked Sendable {
        // Used by one save at a time, one after the other.
        var task: Task<(ImportChunk, Prepared), any Error>?
    }

    static func judge(_ p: ImportProgress, request: ImportRequest) throws {
        if p.read > 0, p.rejected == p.read {
            var first = ""
            let handle = FileHandle(forReadingAtPath: request.rejectsPath)
            defer { try? handle?.close() }
            if let head = try? handle?.read(upToCount: 4096), let end = head.firstIndex(of: 0x0A),
                let object = try? JSONSerialization.jsonObject(with: head[..<end]) as? [String: Any],
                let line = object["line"] as? Int, let reason = object["reason"] as? String
            {
                first = "; the first, on line \(line): \(reason)"
            }
            throw DepotError(
                .invalidArgument,
                "no record of \(request.path) could be read: all \(p.read) were "
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
    package static func events(_ request: ImportRequest, into store: some StoreBackend) -> AsyncThrowingStream<
        ImportProgress, any Error
    > {
        AsyncThrowingStream { continuation in
            // Unstructured: it feeds the stream returned here; the stream's termination cancels it.
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
        DepotError(
            .invalidArgument,
            "the import rejected \(p.rejected) records, more than max_rejects (\(limit)); "
                + "the records saved so far stay saved; see \(request.rejectsPath) for each record's line and reason")
    }
}
