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
    public static func run(
        _ request: ImportRequest, into store: Store,
        progress: (@Sendable (ImportProgress) -> Void)? = nil
    ) async throws -> ImportProgress {
        let entity = try store.reader.entity(request.entity)
        let options = request.options
        let deferReferences = options.deferReferences
        // A record that may refer to another of the same entity must be
        // written after it, as in the file: no sorted runs then.
        let selfReferring =
            !deferReferences
            && entity.relationships.contains {
                if case .toOne = $0.kind { $0.target == entity.name } else { false }
            }
        let table = entity.table
        let start = try await ImportFeed.start(
            request, entity: entity, saveEvery: store.configuration.saveEvery,
            saveInterval: store.configuration.saveInterval, adaptiveSaves: store.configuration.adaptiveSaves,
            chunk: Self.chunkSize, sortable: !selfReferring, checkpoint: try await store.checkpoint(job: request.job),
            floor: {
                try await store.reader.read { db in try Int64.fetchOne(db, sql: "SELECT max(rowid) FROM \(table)") ?? 0
                }
            },
            progress: progress)
        let feed: ImportFeed
        switch start {
        case .finished(let done): return done
        case .feed(let started): feed = started
        }
        let policy = options.onConflict
        let clock = ContinuousClock()
        while true {
            let begun = feed.beginSave()
            let outcome = try await store.save(author: request.author, job: request.job) { save in
                var this = begun
                var chunk: ImportChunk
                repeat {
                    chunk = try this.take()
                    let counts = try save.write(
                        chunk.batch, policy: policy, sourceRowidFloor: this.rowidFloor,
                        deferReferences: deferReferences)
                    this.add(chunk, counts)
                } while !this.ends(after: chunk)
                try save.setCheckpoint(job: this.job, data: try this.close())
                return (this, clock.now)
            }.value
            if try feed.committed(outcome.0, commitEnded: outcome.1) { break }
            try Task.checkCancellation()
        }
        return try feed.finish()
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
    public static func events(_ request: ImportRequest, into store: Store) -> AsyncThrowingStream<
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
