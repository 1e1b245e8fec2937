import Foundation

/// The hosts that serve a store together (a PostgreSQL store, DESIGN §15):
/// this host's name, and how long its claim on a job lasts unless renewed.
package struct JobHosting: Sendable, Hashable {
    package var host: String
    package var lease: Duration

    package init(host: String, lease: Duration) {
        self.host = host
        self.lease = lease
    }
}

/// A job's run stopped because this host no longer holds the job: its
/// lease lapsed and another host took it over (resuming it from its
/// checkpoint), or another host ended it. The job is not this host's to
/// end: it ends as the host that holds it records.
package struct JobHandedOver: Error, Sendable {
    package var job: String

    package init(job: String) { self.job = job }
}

/// The records the daemon keeps with a store, sharing its fate: its jobs
/// (in submission order, `depot_jobs`), the checkpoint of each job under
/// way (`depot_checkpoints`, written in the job's saves) and the content
/// hashes of the files it imported (`depot_imported_files`). Written once,
/// as SQL over the backend's sessions; a backend gives only how its hosts
/// share jobs (``StoreBackend/jobHosting`` and ``StoreBackend/runJob(_:_:)``).
///
/// ```swift
/// try await store.putJob(id: "j1", state: "queued", record: Array(json.utf8))
/// let records = try await store.jobs()
/// ```
extension StoreBackend {
    /// The hosts that serve the store together (``StoreSettings/jobHosting``);
    /// nil when only this host serves it (an SQLite store). How a host
    /// claims a job is the backend's (``runJob(_:_:)``).
    package var jobHosting: JobHosting? { settings.jobHosting }

    /// The states of a job's record that end it (the daemon's, and `done`
    /// of a PostgreSQL store's `finishJob`).
    package static var finalJobStates: [String] { ["succeeded", "failed", "cancelled", "done"] }

    /// `state NOT IN ('succeeded', …)`: a job not ended, from ``finalJobStates``.
    private static var notFinal: SQLStatement {
        "state NOT IN (\(sql: finalJobStates.map { "'\($0)'" }.joined(separator: ", ")))"
    }

    /// How often a host looks for jobs it may take over on a store several
    /// hosts serve (``claimableJobs()``): every third of a lease; nil when
    /// only this host serves the store.
    package var jobPollInterval: Duration? { jobHosting.map { $0.lease / 3 } }

    /// Every persisted job record, oldest first.
    package func jobs() async throws -> [(id: String, record: [UInt8])] {
        try await reads.rows("SELECT id, record FROM \(table: "depot_jobs") ORDER BY seq").compactMap(Self.job)
    }

    /// A job's persisted record, nil when there is none.
    package func job(_ id: String) async throws -> [UInt8]? {
        try await reads.rows("SELECT record FROM \(table: "depot_jobs") WHERE id = \(bind: id)").first?.first?.text
            .map { Array($0.utf8) }
    }

    /// Persists a job's record (inserted, or replacing the one with its id)
    /// and its state (the daemon's name of it: `queued`, `running`,
    /// `succeeded`, `failed`, `cancelled`). On a store several hosts serve,
    /// a host's write of a job another host holds under a live lease, or of
    /// a job already ended, changes nothing, and a state that does not end
    /// the job is the claim's to keep (``runJob(_:_:)``): a host that lost
    /// its claim cannot overwrite the new holder's record.
    ///
    /// - Returns: whether the record was written (false: another host
    ///   holds the job, or it had ended).
    /// - Throws: ``DepotError/Code/invalidArgument`` for a record that is
    ///   not UTF-8 text (the daemon's are JSON); the store's errors (a full
    ///   disk is ``DepotError/Code/diskFull``).
    @discardableResult
    package func putJob(id: String, state: String, record: [UInt8]) async throws -> Bool {
        let text = try utf8(record, of: "job \(id)'s record")
        let statement: SQLStatement
        if let hosting = jobHosting {
            let state = Self.finalJobStates.contains(state) ? state : "queued"
            statement = """
                INSERT INTO \(table: "depot_jobs") AS j (id, record, state) \
                VALUES (\(bind: id), \(bind: text), \(bind: state)) ON CONFLICT (id) DO UPDATE SET \
                record = excluded.record, \
                state = CASE WHEN excluded.state = 'queued' THEN j.state ELSE excluded.state END, \
                owner = CASE WHEN excluded.state = 'queued' THEN j.owner END, \
                lease_until = CASE WHEN excluded.state = 'queued' THEN j.lease_until END \
                WHERE j.\(Self.notFinal) \
                AND (j.owner IS NULL OR j.owner = \(bind: hosting.host) OR \(secondsSince: "j.lease_until") > 0) \
                RETURNING id
                """
        } else {
            statement = """
                INSERT INTO \(table: "depot_jobs")(id, record, state) VALUES (\(bind: id), \(bind: text), \(bind: state)) \
                ON CONFLICT (id) DO UPDATE SET state = excluded.state, record = excluded.record RETURNING id
                """
        }
        return try await withHistory { session in try await !session.rows(statement).isEmpty }
    }

    /// The jobs no live host holds: queued ones, and running ones whose
    /// host's lease lapsed (it died). Always none on a store only this host serves.
    package func claimableJobs() async throws -> [(id: String, record: [UInt8])] {
        guard jobHosting != nil else { return [] }
        return try await reads.rows(
            """
            SELECT id, record FROM \(table: "depot_jobs") WHERE state = 'queued' \
            OR (state = 'running' AND \(secondsSince: "lease_until") > 0) ORDER BY seq
            """
        ).compactMap(Self.job)
    }

    /// Asks the host running job `id` to cancel it (at its next save, when
    /// its lease is renewed), on a store several hosts serve; false when no
    /// host runs it unfinished (always on a store only this host serves,
    /// whose jobs stop here).
    package func requestCancel(_ id: String) async throws -> Bool {
        guard jobHosting != nil else { return false }
        let statement: SQLStatement = """
            UPDATE \(table: "depot_jobs") SET cancel_requested = \(bind: Value.bool(true)) \
            WHERE id = \(bind: id) AND \(Self.notFinal) RETURNING id
            """
        return try await withHistory { session in !(try await session.rows(statement)).isEmpty }
    }

    /// The job that imported a file of this content hash, if one did (watched folders).
    package func importedFile(hash: String) async throws -> String? {
        try await reads.rows("SELECT job FROM \(table: "depot_imported_files") WHERE hash = \(bind: hash)")
            .first?.first?.text
    }

    /// Records that `job` imported a file of this content hash.
    package func recordImportedFile(hash: String, path: String, job: String) async throws {
        let statement: SQLStatement = """
            INSERT INTO \(table: "depot_imported_files")(hash, path, job, imported) \
            VALUES (\(bind: hash), \(bind: path), \(bind: job), \(bind: Timestamp.now())) ON CONFLICT (hash) DO NOTHING
            """
        try await withHistory { session in try await session.execute(statement) }
    }

    /// The checkpoint `job` saved last, if any (``WriteContext/setCheckpoint(job:data:)``).
    package func checkpoint(job: String) async throws -> [UInt8]? {
        try await reads.rows(
            "SELECT \(textOfBytes: "data") FROM \(table: "depot_checkpoints") WHERE job = \(bind: job)"
        ).first?.first?.text.map { Array($0.utf8) }
    }

    private static func job(_ row: [Value]) -> (id: String, record: [UInt8])? {
        guard row.count == 2, let id = row[0].text, let record = row[1].text else { return nil }
        return (id, Array(record.utf8))
    }

}

/// `bytes` as the UTF-8 text they are, or an error naming `what`.
private func utf8(_ bytes: [UInt8], of what: String) throws -> String {
    guard let text = String(bytes: bytes, encoding: .utf8) else {
        throw DepotError(.invalidArgument, "\(what) is not UTF-8 text")
    }
    return text
}

extension WriteContext {
    /// Saves a job's checkpoint (UTF-8 text, its JSON) in this save's transaction.
    package func setCheckpoint(job: String, data: [UInt8]) async throws {
        let text = try utf8(data, of: "job \(job)'s checkpoint")
        try await execute(
            """
            INSERT INTO \(table: "depot_checkpoints")(job, data, updated) \
            VALUES (\(bind: job), \(bytes: text), \(bind: Timestamp.now())) \
            ON CONFLICT (job) DO UPDATE SET data = excluded.data, updated = excluded.updated
            """)
    }

    /// Removes a job's checkpoint in this save's transaction.
    package func removeCheckpoint(job: String) async throws {
        try await execute("DELETE FROM \(table: "depot_checkpoints") WHERE job = \(bind: job)")
    }
}
