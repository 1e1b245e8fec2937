import DepotEngine
import Foundation
import PostgresNIO

/// A job as the store's jobs table holds it: its id and its record (the
/// daemon's JSON), and who runs it.
public struct ClaimedJob: Sendable, Hashable {
    public var id: String
    public var record: String
}

/// Jobs of a PostgreSQL store, run by one host at a time (DESIGN §15).
///
/// A host claims the oldest job that is queued, or running under a lease
/// that lapsed (its host died or lost the server), with
/// `SELECT … FOR UPDATE SKIP LOCKED`, so that two hosts claiming at once
/// never take the same job; it renews the lease while the job runs, and a
/// job whose lease lapsed is claimed again by another host, which resumes
/// it from its last checkpoint (an import's is committed with its records).
///
/// ```swift
/// try await store.putJob(id: "j1", state: "queued", record: Array(json.utf8))
/// if let job = try await store.claimJob(host: "host-a", lease: .seconds(10)) {
///     // run it, calling renewLease(job:host:lease:) every few seconds
///     try await store.finishJob(job.id, host: "host-a", record: doneJSON, state: "done")
/// }
/// ```
extension PostgresStore {
    /// Claims a job for `host` under a lease of `lease`: job `id`, or the
    /// oldest one when nil, if it is queued, already `host`'s (a host
    /// restarted takes its own jobs back), or running under a lease that
    /// lapsed; nil when there is none free. The daemon's only claim: the
    /// row is locked with `FOR UPDATE SKIP LOCKED`, so that two hosts
    /// claiming at once never both take a job, and neither waits on the other.
    public nonisolated func claimJob(_ id: String? = nil, host: String, lease: Duration) async throws -> ClaimedJob? {
        let jobs = table("depot_jobs")
        let sql =
            "UPDATE \(jobs) SET state = 'running', owner = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond' "
            + "WHERE id = (SELECT id FROM \(jobs) WHERE ($3::text IS NULL OR id = $3) AND (state = 'queued' "
            + "OR (state = 'running' AND (owner = $1 OR lease_until < clock_timestamp()))) "
            + "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, record"
        return try await read { connection in
            var binds = PostgresBindings()
            binds.append(host)
            binds.append(Self.milliseconds(lease))
            binds.append(id)
            let rows = try await PostgresSQL.textRows(connection, sql, binds, logger: logger)
            guard let row = rows.first, let id = row[0], let record = row[1] else { return nil }
            return ClaimedJob(id: id, record: record)
        }
    }

    /// Extends `host`'s lease on `job` to `lease` from now.
    ///
    /// - Returns: false when `host` no longer holds the job (its lease
    ///   lapsed and another host claimed it): the host must stop running it.
    public nonisolated func renewLease(job: String, host: String, lease: Duration) async throws -> Bool {
        try await renew(job: job, host: host, lease: lease) != .lost
    }

    /// What a renewal found.
    enum Renewal: Equatable {
        /// The host still holds the job.
        case held
        /// Another host took it over.
        case lost
        /// The host holds it, and a cancel was asked through some host.
        case cancelRequested
    }

    /// Extends `host`'s lease on `job`, and says whether a cancel was asked.
    nonisolated func renew(job: String, host: String, lease: Duration) async throws -> Renewal {
        let sql =
            "UPDATE \(table("depot_jobs")) SET lease_until = clock_timestamp() + $3 * interval '1 millisecond' "
            + "WHERE id = $1 AND owner = $2 AND state = 'running' RETURNING cancel_requested::text"
        return try await read { connection in
            var binds = PostgresBindings()
            binds.append(job)
            binds.append(host)
            binds.append(Self.milliseconds(lease))
            guard let row = try await PostgresSQL.textRows(connection, sql, binds, logger: logger).first else {
                return .lost
            }
            return row.first == "true" ? .cancelRequested : .held
        }
    }

    /// The fence of a job's save (last in its transaction): the save commits only
    /// while this host holds the job. A host whose lease lapsed (a renewal
    /// that could not reach the server in time) while another host claimed
    /// the job and resumed it from its checkpoint would otherwise save the
    /// same rows a second time beside it (issue 51). A job the jobs table
    /// does not know (a save given a job's name by the engine's own
    /// callers) is not fenced.
    ///
    /// The job's row is locked `FOR KEY SHARE` until the save commits: a
    /// claim (`FOR UPDATE`) cannot take the job meanwhile, while the
    /// lease's renewals (updates of no key) go on. The fence renewed the
    /// lease itself, and so locked the row against them: a renewal then
    /// waited for the save's COMMIT, and a commit slower than the lease let
    /// it lapse under a host that was saving.
    ///
    /// - Throws: ``DepotError/Code/conflict`` when another host holds the
    ///   job, or it ended: the save rolls back.
    nonisolated func fence(job: String, connection: PostgresConnection) async throws {
        let jobs = table("depot_jobs")
        let sql =
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM \(jobs) WHERE id = $1 AND owner = $2 AND state = 'running' "
            + "FOR KEY SHARE) held)::text, (SELECT count(*) FROM \(jobs) WHERE id = $1)::text"
        var binds = PostgresBindings()
        binds.append(job)
        binds.append(configuration.host)
        let row = try await PostgresSQL.textRows(connection, sql, binds, logger: logger).first ?? []
        guard row.count == 2, row[0] == "0", row[1] != "0" else { return }
        throw DepotError(
            .conflict,
            "host \(configuration.host) no longer holds job \(job) of store \(JSONText.quoted(name)): "
                + "its lease lapsed and another host took the job over, or it ended; this save is not kept")
    }

    /// Ends `host`'s run of `job` with its final record and state (`done`,
    /// `failed`, `cancelled`); nothing changes when another host holds it.
    ///
    /// - Returns: whether `host` still held the job.
    @discardableResult
    public nonisolated func finishJob(_ job: String, host: String, record: String, state: String) async throws -> Bool {
        let sql =
            "UPDATE \(table("depot_jobs")) SET state = $3, record = $4, lease_until = NULL "
            + "WHERE id = $1 AND owner = $2 AND state = 'running' RETURNING id"
        return try await read { connection in
            var binds = PostgresBindings()
            binds.append(job)
            binds.append(host)
            binds.append(state)
            binds.append(record)
            return !(try await PostgresSQL.textRows(connection, sql, binds, logger: logger)).isEmpty
        }
    }

    /// The job's state, owner and whether its lease has lapsed.
    public nonisolated func jobClaim(_ job: String) async throws -> (state: String, owner: String?, lapsed: Bool)? {
        let sql =
            "SELECT state, owner, (lease_until IS NOT NULL AND lease_until < clock_timestamp())::text "
            + "FROM \(table("depot_jobs")) WHERE id = $1"
        return try await read { connection in
            var binds = PostgresBindings()
            binds.append(job)
            guard let row = try await PostgresSQL.textRows(connection, sql, binds, logger: logger).first,
                let state = row[0]
            else { return nil }
            return (state, row[1], row[2] == "true")
        }
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    }

    /// Runs `body` while renewing `host`'s lease on `job` every third of
    /// `lease`; when a renewal finds the job held by another host, `body`'s
    /// task is cancelled (the other host resumes it from its checkpoint).
    ///
    /// The renewals run on a thread of their own (``LeaseExecutor``), not
    /// on Swift's shared pool: a host whose job's work kept both of the
    /// pool's threads busy (two hosts importing 100,000 rows a save on two
    /// cores) woke its renewer 3 s late, its 2 s lease lapsed, and the job
    /// went back and forth between the hosts (issue 51).
    ///
    /// - Throws: ``JobHandedOver`` when `body` stopped and this host no
    ///   longer holds the job (another host took it over, or ended it): the
    ///   job is not this host's to end; otherwise what `body` threw.
    public nonisolated func withLease<T: Sendable>(
        on job: String, host: String, lease: Duration,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        // Unstructured: the work and its lease renewal race; whichever fails first cancels the other.
        let work = Task { try await body() }
        @Sendable func keepRenewing() async {
            let clock = ContinuousClock()
            var renewed = clock.now
            while !Task.isCancelled {
                await LeaseExecutor.shared.sleep(for: lease / 3)
                if Task.isCancelled { return }
                let asked = clock.now
                // A renewal that fails to reach the server is tried again;
                // one that finds the job gone, or a cancel asked through
                // any host, stops the work (at its next save). The lease
                // is renewed until the work has stopped: a save under way
                // ends first, and a lapsed lease would hand the job to
                // another host while this one still ends it (issue 51).
                let renewal: Renewal
                do {
                    renewal = try await renew(job: job, host: host, lease: lease)
                } catch {
                    events.warning(
                        "a job's lease could not be renewed; tried again",
                        metadata: ["JOB_ID": "\(job)", "STORE": "\(name)", "ERROR": "\(error)"])
                    continue
                }
                let now = clock.now
                if now - renewed > lease / 2 {
                    events.warning(
                        "a job's lease was renewed late",
                        metadata: [
                            "JOB_ID": "\(job)", "STORE": "\(name)",
                            "SINCE_LAST_MS": "\(Self.milliseconds(now - renewed))",
                            "WOKE_LATE_MS": "\(Self.milliseconds(asked - renewed - lease / 3))",
                            "QUERY_MS": "\(Self.milliseconds(now - asked))"
                        ])
                }
                renewed = now
                switch renewal {
                case .lost:
                    events.notice(
                        "another host took a job over; it stops here",
                        metadata: ["JOB_ID": "\(job)", "STORE": "\(name)"])
                    work.cancel()
                    return
                case .cancelRequested:
                    work.cancel()
                case .held:
                    break
                }
            }
        }
        let renewer = Task(executorPreference: LeaseExecutor.shared) { [self] in
            await LeaseExecutor.$current.withValue(LeaseExecutor.shared) { await keepRenewing() }
        }
        defer { renewer.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await work.value
            } onCancel: {
                work.cancel()
            }
        } catch {
            // Stopped because the job is no longer this host's (a renewal
            // found it taken, a save's fence refused): the host that holds
            // it ends it. A host that ended it "cancelled" here recorded a
            // cancel nobody asked for (issue 51).
            // Unstructured: this task may be cancelled (a cancel asked), the question must be asked anyway.
            let claim = await Task { () -> (state: String, owner: String?, lapsed: Bool)? in
                do {
                    return try await jobClaim(job)
                } catch let claimError {
                    events.warning(
                        "whether this host still holds a job cannot be read",
                        metadata: ["JOB_ID": "\(job)", "STORE": "\(name)", "ERROR": "\(claimError)"])
                    return nil
                }
            }.value
            if let claim, claim.owner != host || claim.state != "running" {
                throw JobHandedOver(job: job)
            }
            throw error
        }
    }
}

/// The thread the leases of a host's jobs are renewed on: a serial queue
/// of its own, so that a renewal never waits for Swift's shared pool,
/// which a job's work may keep busy (its threads are as many as the
/// cores). Written here: neither SwiftNIO nor postgres-nio gives a task
/// executor.
final class LeaseExecutor: TaskExecutor {
    static let shared = LeaseExecutor()
    private let queue = DispatchQueue(label: "depot.job-leases")

    /// The executor a task asked its statements to run on: the tasks a
    /// statement starts on its caller's behalf (``PostgresSQL/whileOpen(_:_:)``)
    /// take it, as unstructured tasks do not inherit an executor preference
    /// (a renewal's statement waited 8 s for the shared pool).
    @TaskLocal static var current: (any TaskExecutor)?

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Waits `duration`, woken by this queue (a sleep woken by the shared
    /// pool would wait for it too).
    func sleep(for duration: Duration) async {
        let nanoseconds = Int(PostgresStore.milliseconds(duration)) * 1_000_000
        await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
            queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { resume.resume() }
        }
    }
}
