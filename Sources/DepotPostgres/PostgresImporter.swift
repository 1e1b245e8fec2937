public import DepotEngine

/// Imports a file into an entity of a ``PostgresStore``, as
/// ``Importer/run(_:into:progress:)`` does into an SQLite store: the same
/// reading (``ImportFeed``: the checkpoint, the parser thread, the rejects
/// file), the same saves, each committing its records, their history and
/// the job's checkpoint in one PostgreSQL transaction, so that a job
/// restarted under the same id resumes after its last save, exactly once.
///
/// ```swift
/// let request = ImportRequest(job: "j1", entity: "Trip", path: "trips.csv", rejectsPath: "j1.rejects.ndjson")
/// let result = try await PostgresImporter.run(request, into: store)
/// ```
public enum PostgresImporter {
    /// Records to a batch, about: each batch costs a few round trips to the
    /// server (the lookup of its keys, the COPY of its new records, the
    /// update, the history's COPY), so batches are far larger than an
    /// SQLite store's. A save's run is cut into even batches near this size.
    static let chunkSize = 65_536

    /// Runs (or resumes) an import to its end.
    ///
    /// - Throws: as ``Importer/run(_:into:progress:)``: an unreadable or
    ///   changed input, a conflict under `fail`, too many rejects, a file of
    ///   which nothing could be read; a server error as
    ///   ``DepotError/Code/database``.
    public static func run(
        _ request: ImportRequest, into store: PostgresStore,
        progress: (@Sendable (ImportProgress) -> Void)? = nil
    ) async throws -> ImportProgress {
        let entity = try store.entity(request.entity)
        let configuration = store.configuration
        let deferReferences = request.options.deferReferences
        // A record that may refer to another of the same entity must be
        // written after it, as in the file: no sorted runs then.
        let selfReferring =
            !deferReferences
            && entity.relationships.contains {
                if case .toOne = $0.kind { $0.target == entity.name } else { false }
            }
        // Runs as long as a save (not an SQLite store's 65,536): each batch
        // is then a narrow band of the identifier's order, and the inserts
        // of a save sweep the key's index once instead of once a batch. A
        // run is cut into even batches of about `chunkSize` (not three full
        // ones and a small rest, which would cost a round of statements of
        // its own and leave the next batch no time to be made ready).
        var request = request
        let run = max(1, request.options.saveEvery ?? configuration.saveEvery)
        if request.options.sortRun > 0 { request.options.sortRun = run }
        let batches = max(1, (run + Self.chunkSize / 2) / Self.chunkSize)
        let start = try await ImportFeed.start(
            request, entity: entity, saveEvery: configuration.saveEvery, saveInterval: configuration.saveInterval,
            adaptiveSaves: false, chunk: (run + batches - 1) / batches, sortable: !selfReferring, shortFirstRun: true,
            checkpoint: try await store.checkpoint(job: request.job), floor: { 0 }, progress: progress)
        let feed: ImportFeed
        switch start {
        case .finished(let done): return done
        case .feed(let started): feed = started
        }
        let policy = request.options.onConflict
        // As an SQLite store's import: of one identifier's rows in a batch,
        // only the last is written under upsert and replace.
        let supersede = policy == .upsert || policy == .replace
        let clock = ContinuousClock()
        // While a save writes a chunk, the next one is taken and made ready
        // (PreparedBatch) on another thread: the server's work on one batch
        // and the client's on the next overlap. A chunk taken ahead when a
        // save ends goes to the next save; until a save adds it, it is in
        // no checkpoint, so a stop there reads it again.
        let ahead = Ahead()
        defer { ahead.task?.cancel() }
        // The keys this job gave: the rows whose key it never gave are
        // taken for new records without a lookup (JobKeys). Batches are
        // made ready one after the other, so each sees the keys of those before.
        let keys = JobKeys()
        @Sendable func ready(_ save: ImportSave) -> Task<(ImportChunk, PreparedBatch), any Error> {
            // Detached: the next batch is read ahead while the save writes this one; the save awaits it.
            Task.detached {
                let chunk = try await save.takeWaiting()
                var prepared = try store.prepare(
                    chunk.batch, policy: policy, supersede: supersede,
                    deferReferences: deferReferences)
                prepared.guessNew(keys)
                return (chunk, prepared)
            }
        }
        while true {
            let begun = feed.beginSave()
            let outcome = try await store.save(author: request.author, job: request.job) { save in
                var this = begun
                var chunk: ImportChunk
                repeat {
                    let taken = ahead.task ?? ready(this)
                    let prepared: PreparedBatch
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

    /// The chunk being taken and made ready ahead of the save that writes it.
    // @unchecked: set and taken by the import's one save loop, one save at a time.
    private final class Ahead: @unchecked Sendable {
        // Used by one save at a time, one after the other.
        var task: Task<(ImportChunk, PreparedBatch), any Error>?
    }
}
