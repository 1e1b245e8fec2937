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
    /// Records to a batch: each batch costs a few round trips to the server
    /// (its COPY, the lookup of the stored records, the insert, the update,
    /// the history's COPY), so batches are ten times an SQLite store's.
    static let chunkSize = 65_536

    /// Runs (or resumes) an import to its end.
    ///
    /// - Throws: as ``Importer/run(_:into:progress:)``: an unreadable or
    ///   changed input, a conflict under `fail`, too many rejects, a file of
    ///   which nothing could be read; a server error as
    ///   ``DepotError/Code/database``.
    public static func run(_ request: ImportRequest, into store: PostgresStore,
                           progress: (@Sendable (ImportProgress) -> Void)? = nil) async throws -> ImportProgress {
        let entity = try store.entity(request.entity)
        let configuration = store.configuration
        let deferReferences = request.options.deferReferences
        // A record that may refer to another of the same entity must be
        // written after it, as in the file: no sorted runs then.
        let selfReferring = !deferReferences && entity.relationships.contains {
            if case .toOne = $0.kind { $0.target == entity.name } else { false }
        }
        let start = try await ImportFeed.start(
            request, entity: entity, saveEvery: configuration.saveEvery, saveInterval: configuration.saveInterval,
            adaptiveSaves: false, chunk: Self.chunkSize, sortable: !selfReferring,
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
        while true {
            let begun = feed.beginSave()
            let outcome = try await store.save(author: request.author, job: request.job) { save in
                var this = begun
                var chunk: ImportChunk
                repeat {
                    // The parser runs on a thread of its own, ahead of the saves.
                    chunk = try await this.takeWaiting()
                    let counts = try await save.write(chunk.batch, policy: policy, supersede: supersede,
                                                      deferReferences: deferReferences)
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
}
