package import DepotEngine
import DepotWire
import Foundation
package import Logging
import Synchronization

/// Runs the jobs: persisted in their store, one at a time per store in FIFO
/// order, stores in parallel (``JobQueue`` decides, this actor carries out);
/// an interrupted job resumes when the daemon starts again, from its last
/// checkpoint. The jobs run as child tasks of ``run()``, which the job
/// service calls.
package actor JobManager {
    /// A job to run, with the stream that tells it to stop.
    private struct Launch: Sendable {
        var record: JobRecord
        var store: any StoreBackend
        var interrupted: AsyncStream<Void>
    }

    /// The open stores, read by requests without waiting on this actor.
    package nonisolated let stores = StoreRegistry()
    private var queue = JobQueue(now: Timestamp.now)
    /// A job's record as shown while its end is carried out (persisted, its
    /// file moved): the final state shows once that is done.
    private var ending: [String: JobRecord] = [:]
    private var interrupts: [String: AsyncStream<Void>.Continuation] = [:]
    private let launches: AsyncStream<Launch>
    private let launcher: AsyncStream<Launch>.Continuation
    private var subscribers: [UUID: (job: String?, continuation: AsyncStream<JobRecord>.Continuation)] = [:]
    private let stateDir: String
    private let logger: Logger
    private let metrics: Metrics
    /// Per store several hosts serve: the task that takes over their jobs.
    private var pollers: [String: Task<Void, Never>] = [:]
    /// Jobs being submitted here: persisted, not queued yet (the poller
    /// must not take them for another host's).
    private var submitting: Set<String> = []
    /// Called when a job reaches a final state (watched folders move their file).
    private var finishHooks: [@Sendable (JobRecord) async -> Void] = []
    /// Ends that their store could not record (``JobEndLedger``), by job id,
    /// with their slot in the ledger: written to the store before its next
    /// write, and at shutdown.
    private var unrecordedEnds: [String: (record: JobRecord, slot: Int)] = [:]
    private lazy var ledger = JobEndLedger(stateDir: stateDir)

    package init(stateDir: String, logger: Logger, metrics: Metrics) {
        self.stateDir = stateDir
        self.logger = logger
        self.metrics = metrics
        (launches, launcher) = AsyncStream.makeStream(of: Launch.self)
    }

    package func onFinish(_ hook: @escaping @Sendable (JobRecord) async -> Void) { finishHooks.append(hook) }

    /// Runs the jobs, each as a child task, until ``shutdown()``; returns
    /// once every job stopped (at its next save, for the running ones).
    package func run() async {
        await withDiscardingTaskGroup { group in
            for await launch in launches {
                group.addTask { await self.execute(launch) }
            }
        }
        for (_, s) in subscribers { s.continuation.finish() }
        subscribers.removeAll()
    }

    /// Stops taking jobs and interrupts the running ones, which stay
    /// unfinished in their store and resume on the next start; ``run()``
    /// returns once they stopped.
    package func shutdown() async {
        for store in stores.all { await recordUnrecordedEnds(in: store) }
        for (_, poller) in pollers { poller.cancel() }
        pollers.removeAll()
        await perform(queue.stop())
        launcher.finish()
    }

    /// Adds a store and resumes its unfinished jobs.
    ///
    /// A persisted job that cannot run any more (its record does not read
    /// back, or its spec no longer passes ``JobSpec/check(against:)``) is marked failed with
    /// the reason instead of being resumed.
    package func add(store: any StoreBackend) async throws {
        stores.add(store)
        if !ledger.isUsable {
            logger.warning(
                "the file that keeps the ends of jobs a store cannot record is not usable; on a full disk, a failed job may resume at the next start",
                metadata: [LogKey.path: "\(ledger.path)"])
        }
        // Every job, as on a store only this host serves: one whose file is
        // gone fails saying so when it runs, rather than wait unseen.
        for (id, record) in try await store.jobs.all() { await adopt(id, record, in: store) }
        await startMigrations(of: store)
        if let interval = store.jobs.pollInterval {
            // Several hosts serve the store (DESIGN §15): the jobs submitted
            // to the others, or left by one that died, are taken over here
            // too; a job runs on whichever host claims it (``StoreBackend/runJob(_:_:)``).
            pollers[store.name]?.cancel()
            // Unstructured: one per shared store, for the store's life; shutdown() cancels them.
            pollers[store.name] = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let self, !Task.isCancelled else { return }
                    await self.adoptClaimable(from: store)
                }
            }
        }
    }

    /// The `migrate` jobs queued or running in store `store` (of entity
    /// `entity`, when given).
    package func migrating(_ store: String, entity: String? = nil) -> [JobRecord] {
        all().filter {
            $0.kind == .migrate && $0.store == store && (entity == nil || $0.entity == entity)
                && ($0.state == .queued || $0.state == .running)
        }
    }

    /// Brings an open store to the configuration's `entities` (a reload,
    /// `depotctl migrate`) and starts the migrations that asks for.
    ///
    /// - Throws: ``DepotError/Code/conflict`` while the store migrates
    ///   already; what ``StoreBackend/reconfigure(entities:)`` throws.
    package func reconfigure(_ store: any StoreBackend, entities: [EntitySchema]) async throws {
        if entities != store.settings.schema.configured {
            guard migrating(store.name).isEmpty else {
                throw DepotError(
                    .conflict,
                    "store \(JSONText.quoted(store.name)) is migrating already; wait for its migrate job to end "
                        + "(depotctl jobs), or cancel it, before the configuration changes it again")
            }
            try await store.reconfigure(entities: entities)
            logger.info("store reconfigured", metadata: [LogKey.store: "\(store.name)"])
        }
        await startMigrations(of: store)
    }

    /// Queues a `migrate` job for each migration the store waits for
    /// (DESIGN §18) that no unfinished job runs already: when the store
    /// opens, and when an entity created over the API changes.
    package func startMigrations(of store: any StoreBackend) async {
        for entity in store.settings.schema.migrations.keys.sorted() {
            if !migrating(store.name, entity: entity).isEmpty { continue }
            let record = JobRecord(
                id: JobRecord.newID(), spec: .migrate(entity: entity), store: store.name, author: "depotd")
            do {
                _ = try await submit(record)
                logger.info(
                    "entity migrates",
                    metadata: [
                        LogKey.store: "\(store.name)", LogKey.jobID: "\(record.id)",
                        LogKey.entity: "\(entity)",
                        LogKey.changes: "\(store.settings.schema.migrations[entity]?.summary ?? "")"
                    ])
            } catch {
                logger.error(
                    "a migration cannot start",
                    metadata: [LogKey.store: "\(store.name)", LogKey.entity: "\(entity)", LogKey.error: "\(error)"])
            }
        }
    }

    /// Queues here the jobs of `store` that no live host holds and this
    /// host does not know yet.
    private func adoptClaimable(from store: any StoreBackend) async {
        guard !queue.isStopping else { return }
        do {
            for (id, record) in try await store.jobs.claimable()
            where queue.records[id] == nil && !submitting.contains(id) && canRun(id, record, in: store) {
                await adopt(id, record, in: store)
            }
        } catch {
            logger.warning(
                "cannot look for jobs to take over", metadata: [LogKey.store: "\(store.name)", LogKey.error: "\(error)"]
            )
        }
    }

    /// Whether this host should take over a job another host left: an
    /// unfinished import whose file it cannot read (another machine's
    /// folder or spool) is left to the hosts that can.
    private func canRun(_ id: String, _ read: Result<JobRecord, StoredJobs.Unreadable>, in store: any StoreBackend)
        -> Bool
    {
        guard case .success(let record) = read, !record.state.isFinal,
            record.kind == .import, let path = record.path, !FileManager.default.isReadableFile(atPath: path)
        else { return true }
        logger.debug(
            "a job of another host reads a file this host cannot read; left to the others",
            metadata: [LogKey.jobID: "\(id)", LogKey.store: "\(store.name)", LogKey.path: "\(path)"])
        return false
    }

    /// A persisted job: shown, and queued again unless it ended.
    private func adopt(_ id: String, _ read: Result<JobRecord, StoredJobs.Unreadable>, in store: any StoreBackend)
        async
    {
        var record: JobRecord
        switch read {
        case .success(let stored):
            record = stored
        case .failure(let unreadable):
            let error = unreadable.error
            guard var stub = unreadable.stub else {
                logger.error(
                    "a job record cannot be read and is not resumed",
                    metadata: [LogKey.jobID: "\(id)", LogKey.store: "\(store.name)", LogKey.error: "\(error)"])
                return
            }
            stub.error =
                "the job's record could not be read back, so it was not resumed: "
                + ((error as? DecodingError).map(JSONBody.describe) ?? (error as? DepotError)?.message ?? "\(error)")
            record = stub
            await persistLogged(record, in: store)
        }
        let end = ledger.entries().first { $0.store == store.name && $0.id == id }
        if let end, record.state.isFinal {
            // Recorded in the store after all (the daemon stopped before it
            // freed the entry): the entry goes.
            ledger.clear(slot: end.slot)
        }
        if !record.state.isFinal, let end {
            // Its end was not recorded in the store: it ended, it does not resume.
            record.state = JobRecord.State(rawValue: end.state).flatMap { $0.isFinal ? $0 : nil } ?? .failed
            record.finished = record.finished ?? Timestamp.now()
            record.error =
                (end.reason.isEmpty ? "" : end.reason + "; ")
                + "the store could not record this end when the job ended, so it is recorded now and the job does not resume"
            logger.error(
                "a job whose end its store could not record is not resumed",
                metadata: [
                    LogKey.jobID: "\(id)", LogKey.store: "\(store.name)", LogKey.state: "\(record.state.rawValue)"
                ])
            do {
                try await persist(record, in: store)
                ledger.clear(slot: end.slot)
            } catch {
                unrecordedEnds[id] = (record, end.slot)
            }
            removeSpoolFile(of: record)
        }
        if !record.state.isFinal {
            do {
                try record.spec?.check(against: store.reads)
                logger.info("job resumes", metadata: [LogKey.jobID: "\(id)", LogKey.store: "\(store.name)"])
            } catch {
                record.state = .failed
                record.finished = Timestamp.now()
                record.error = "the job cannot resume: " + ((error as? DepotError)?.message ?? "\(error)")
                logger.error(
                    "a persisted job cannot resume and is marked failed",
                    metadata: [
                        LogKey.jobID: "\(id)", LogKey.store: "\(store.name)", LogKey.error: "\(record.error ?? "")"
                    ])
                await persistLogged(record, in: store)
                removeSpoolFile(of: record)
            }
        }
        await perform(queue.restore(record))
    }

    /// Removes the spool files that no unfinished job reads: uploads whose
    /// job ended, or that never became a job (the daemon stopped mid-upload).
    package func removeOrphanSpoolFiles() {
        let folder = stateDir + "/spool"
        let wanted = Set(queue.all.filter { !$0.state.isFinal }.compactMap(\.path))
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let path = folder + "/" + name
            if !wanted.contains(path) { unlink(path) }
        }
    }

    /// An upload's spool file goes once its job ended, however it ended, so
    /// that failed uploads cannot fill `state_dir`.
    private func removeSpoolFile(of record: JobRecord) {
        if record.kind == .import, record.watchFile == nil, let path = record.path, path.hasPrefix(stateDir + "/spool/")
        {
            unlink(path)
        }
    }

    package func all() -> [JobRecord] { queue.all.map { ending[$0.id] ?? $0 } }
    package func job(_ id: String) -> JobRecord? { queue.records[id].map { ending[id] ?? $0 } }

    package var runningSummary: String {
        let active = all().filter { $0.state == .running }
        if active.isEmpty { return "idle; \(stores.count) store\(stores.count == 1 ? "" : "s") open" }
        return active.map(\.summary).joined(separator: "; ")
    }

    /// Persists and queues a job.
    package func submit(_ record: JobRecord) async throws -> JobRecord {
        guard !queue.isStopping else { throw JobRefusal.stopping }
        let store = try stores.require(record.store)
        submitting.insert(record.id)
        defer { submitting.remove(record.id) }
        try await persist(record, in: store)
        let effects = try queue.submit(record)
        publish(record)
        metrics.jobSubmitted(record.kind.rawValue)
        await perform(effects)
        return record
    }

    /// Cancels a queued job at once, a running one at its next save.
    ///
    /// On a store several hosts serve, the host running the job hears the
    /// cancel at its next lease renewal and stops at its next save; a job
    /// this host does not know yet but another runs is found in the store.
    package func cancel(_ id: String) async throws -> JobRecord {
        guard let known = queue.records[id] else {
            for store in stores.all where try await store.jobs.requestCancel(id) {
                if let record = try await store.jobs.record(id) { return record }
            }
            throw JobRefusal.unknownJob(id)
        }
        if !known.state.isFinal, let store = stores.store(known.store) {
            let requested = try await store.jobs.requestCancel(id)
            // Queued here but run by another host (a shared store): the
            // cancel is that host's to carry out at its next save, and the
            // job ends as it records (issue 51: this host showed it
            // cancelled while the other finished it).
            if requested, known.state == .queued, store.jobs.pollInterval != nil,
                let stored = try await store.jobs.record(id), stored.state == .running
            {
                return stored
            }
        }
        try await transition(id) { try $0.cancel(id) }
        return job(id)!
    }

    /// Events of one job (or of all jobs, with `nil`): its record each time it changes.
    /// For one job the stream starts with its current record and ends when it is final.
    package func events(job id: String?) -> AsyncStream<JobRecord> {
        let (stream, continuation) = AsyncStream.makeStream(of: JobRecord.self, bufferingPolicy: .bufferingNewest(64))
        let key = UUID()
        if let id, let record = job(id) {
            continuation.yield(record)
            if record.state.isFinal {
                continuation.finish()
                return stream
            }
        }
        subscribers[key] = (id, continuation)
        // Unstructured: onTermination is synchronous and the actor is reached only from a task.
        continuation.onTermination = { _ in Task { await self.unsubscribe(key) } }
        return stream
    }

    private func unsubscribe(_ key: UUID) { subscribers[key] = nil }

    private func publish(_ record: JobRecord) {
        for (key, s) in subscribers where s.job == nil || s.job == record.id {
            s.continuation.yield(record)
            if s.job != nil && record.state.isFinal {
                s.continuation.finish()
                subscribers[key] = nil
            }
        }
    }

    /// A transition that may end job `id`: until its end is carried out,
    /// the job shows as it was before.
    private func transition(_ id: String, _ change: (inout JobQueue) throws -> [JobQueue.Effect]) async rethrows {
        if let before = queue.records[id], !before.state.isFinal { ending[id] = before }
        let effects: [JobQueue.Effect]
        do {
            effects = try change(&queue)
        } catch {
            ending[id] = nil
            throw error
        }
        await perform(effects)
        ending[id] = nil
    }

    /// Carries out what the queue decided.
    private func perform(_ effects: [JobQueue.Effect]) async {
        for effect in effects {
            switch effect {
            case .start(let record):
                guard let store = stores.store(record.store) else { continue }
                publish(record)
                let (interrupted, interrupt) = AsyncStream.makeStream(
                    of: Void.self, bufferingPolicy: .bufferingNewest(1))
                interrupts[record.id] = interrupt
                launcher.yield(Launch(record: record, store: store, interrupted: interrupted))
            case .interrupt(let id):
                interrupts[id]?.yield()
            case .ended(let record):
                await announceEnd(record)
            }
        }
    }

    /// A job's run: its work, stopped early when it is interrupted.
    private nonisolated func execute(_ launch: Launch) async {
        await work(launch.record, store: launch.store, interrupted: launch.interrupted)
        await dropInterrupt(launch.record.id)
    }

    private func dropInterrupt(_ id: String) {
        interrupts.removeValue(forKey: id)?.finish()
    }

    private func work(_ start: JobRecord, store: any StoreBackend, interrupted: AsyncStream<Void>) async {
        var record = start
        // Progress flows through one stream, read in order by one task; the
        // newest report replaces one not yet read. The job's end waits for
        // it, so no progress shows after the final state.
        let (progress, reports) = AsyncStream.makeStream(of: JobRecord.self, bufferingPolicy: .bufferingNewest(1))
        // Unstructured: it runs on this actor (progressed is isolated); the job's end awaits it.
        let reader = Task { for await report in progress { self.progressed(report) } }
        var failure: (any Error)?
        var wasCancelled = false
        // The record another host ended the job with, on a store several hosts serve.
        var endedElsewhere: JobRecord?
        // Whether this host got to run it (claimed it, on a shared store).
        let ranHere = SharedFlag()
        let interruption = Interruption()
        // Unstructured: it waits for the interruption while the job runs, and goes with it.
        let interrupter = Task {
            var waiting = interrupted.makeAsyncIterator()
            if await waiting.next() != nil { interruption.interrupt() }
        }
        defer { interrupter.cancel() }
        runs: while true {
            do {
                // Run once this host holds the job (DESIGN §15): at once on an
                // SQLite store; on PostgreSQL after claiming it from the others.
                let (stateDir, metrics) = (stateDir, metrics)
                // Unstructured: an interruption (a cancel, the shutdown)
                // cancels the job's run, not what follows it here: the
                // end is read and written in a task not cancelled. (Ended
                // in the cancelled task, the store's calls threw at once,
                // and a host that had lost the job wrote its own end.)
                let run = Task { [record, ranHere] in
                    try await store.jobs.run(record.id) {
                        ranHere.set()
                        var running = record
                        try await self.persist(running, in: store)
                        try await JobExecutor(stateDir: stateDir, store: store, metrics: metrics) { report in
                            reports.yield(report)
                        }.run(&running)
                        return running
                    }
                }
                interruption.started(run)
                let ran: JobRecord?
                do {
                    // This task cancelled (the job manager's own end) cancels the run too.
                    ran = try await withTaskCancellationHandler {
                        try await run.value
                    } onCancel: {
                        run.cancel()
                    }
                } catch {
                    wasCancelled = run.isCancelled
                    throw error
                }
                if let ran {
                    record = ran
                } else if let ended = try await store.jobs.read(record.id) {
                    endedElsewhere = try ended.mapError(\.error).get()
                }
            } catch is JobHandedOver {
                // Another host took the job over (this host's lease
                // lapsed), or ended it: it ends as that host records. A
                // host that ended it here recorded it cancelled, or failed
                // on its refused save, while the other ran it (issue 51).
                // When no host holds it any more (the other's lease lapsed
                // too), this host runs it again, from its checkpoint.
                logger.notice(
                    "another host holds a job this host ran, or ended it; it ends as that host records",
                    metadata: [LogKey.jobID: "\(record.id)", LogKey.store: "\(record.store)"])
                if let other = await followElsewhere(record, in: store) {
                    endedElsewhere = other
                } else if queue.isStopping {
                    // Left unfinished: its holder, or this host's next start, resumes it.
                    failure = CancellationError()
                } else {
                    if let stored = try? await store.jobs.record(record.id), !stored.state.isFinal { record = stored }
                    continue runs
                }
            } catch {
                failure = error
                // Cancelled here before this host held the job, while another
                // host runs it (a shared store): the cancel went to that host
                // through the store, and the job ends as that host records it
                // (issue 51: this host showed it cancelled while the other
                // finished it).
                if wasCancelled, !ranHere.isSet, store.jobs.pollInterval != nil,
                    (try? await store.jobs.record(record.id))?.state == .running
                {
                    endedElsewhere = await followElsewhere(record, in: store)
                }
            }
            break
        }
        reports.finish()
        await reader.value
        if let other = endedElsewhere {
            await endAsElsewhere(record, other)
            return
        }
        if failure != nil, let latest = queue.records[record.id] {
            // A job that failed or was cancelled ends with the counters of its
            // last save (its progress reports), not those it started with: what
            // it saved stays saved, and its record says how much.
            record = latest
        }
        if let latest = queue.records[record.id], record.rate == 0 { record.rate = latest.rate }
        if failure != nil, record.rejects == nil {
            // The rows a failed job refused stay downloadable (issue 51: an
            // import whose every row was refused said "see the rejects
            // file", and GET .../rejects answered nothing).
            let rejects = JobExecutor.rejectsPath(stateDir, job: record.id)
            if (FileIdentity.status(atPath: rejects)?.size ?? 0) > 0 { record.rejects = rejects }
        }
        var outcome: JobQueue.Outcome?
        switch failure {
        case nil:
            outcome = .succeeded(record)
        case let error? where error is CancellationError || wasCancelled:
            // A cancelled job may end in SQLite's interruption or another
            // error of the step it was in: the cancellation is what happened.
            // Interrupted by the shutdown, it stays unfinished and resumes
            // on the next start.
            outcome = queue.isStopping ? nil : .cancelled(record)
        case let error?:
            outcome = .failed(record, reason: (error as? DepotError)?.message ?? "\(error)")
        }
        // On a store several hosts serve, the end is written before it
        // shows, and only while this host still holds the job: a host whose
        // lease lapsed (renewals that could not reach the server in time)
        // while another host took the job over and finished it answered
        // `failed` for a job the other answered `succeeded` (issue 51).
        // Refused, the job ends as the host that holds it records.
        if let ended = outcome, ranHere.isSet, store.jobs.pollInterval != nil {
            let final = queue.ending(ended)
            outcome = JobQueue.Outcome(final)
            let written: Bool?
            do {
                written = try await store.jobs.put(final)
            } catch {
                // Unknown: shown as this host ended it, and written again
                // as any end its store could not record (announceEnd).
                logger.warning(
                    "the end of a job this host ran could not be written to its store",
                    metadata: [LogKey.jobID: "\(record.id)", LogKey.store: "\(record.store)", LogKey.error: "\(error)"])
                written = nil
            }
            if written == false {
                logger.notice(
                    "another host holds a job this host ran, or ended it; it ends as that host records",
                    metadata: [LogKey.jobID: "\(record.id)", LogKey.store: "\(record.store)"])
                if let other = await followElsewhere(record, in: store) {
                    await endAsElsewhere(record, other)
                    return
                }
                // This daemon stops first: the job is the other host's
                // to end. (Otherwise no host holds it any more, and this
                // end is written as it shows.)
                if queue.isStopping { outcome = nil }
            }
        }
        await transition(record.id) { $0.finished(record.id, outcome) }
    }

    /// Ends job `record` as another host recorded its end, `other`.
    private func endAsElsewhere(_ record: JobRecord, _ other: JobRecord) async {
        logger.info(
            "job ended on another host",
            metadata: [
                LogKey.jobID: "\(record.id)", LogKey.store: "\(record.store)",
                LogKey.state: "\(other.state.rawValue)"
            ])
        await transition(record.id) { $0.finished(record.id, JobQueue.Outcome(other)) }
    }

    /// The record job `record` ends with on another host, read from the
    /// store every poll interval until it is final; nil when this daemon
    /// stops first, or when no host runs it any more (its lease lapsed:
    /// the cancel asked is then this host's to record).
    private func followElsewhere(_ record: JobRecord, in store: any StoreBackend) async -> JobRecord? {
        let interval = store.jobs.pollInterval ?? .seconds(1)
        // Unstructured: the work's task is cancelled, this wait must not be.
        return await Task {
            while !queue.isStopping {
                if let read = try? await store.jobs.read(record.id), case .success(let now) = read, now.state.isFinal {
                    return now
                }
                if let open = try? await store.jobs.claimable(), open.contains(where: { $0.id == record.id }) {
                    return nil
                }
                try? await Task.sleep(for: min(interval, .seconds(1)))
            }
            return nil
        }.value
    }

    private func progressed(_ record: JobRecord) {
        if queue.progressed(record), let current = queue.records[record.id] { publish(current) }
    }

    /// Records a job's end, lets the hooks act on it (a watched file moves),
    /// then shows it, in the job list and as the final event.
    private func announceEnd(_ record: JobRecord) async {
        do {
            if let store = stores.store(record.store) { try await persist(record, in: store) }
        } catch {
            // The store still says running: the ledger says how it ended,
            // so that it never resumes by itself (issue #35).
            var metadata: Logger.Metadata = [
                LogKey.jobID: "\(record.id)", LogKey.store: "\(record.store)", LogKey.error: "\(error)"
            ]
            do {
                let slot = try ledger.record(
                    store: record.store, id: record.id, state: record.state.rawValue,
                    reason: record.error ?? "")
                unrecordedEnds[record.id] = (record, slot)
                logger.error(
                    "the store cannot record the end of a job; it is kept in the job-ends file and recorded at the store's next write",
                    metadata: metadata)
            } catch let ledgerError {
                metadata["LEDGER_ERROR"] = "\(ledgerError)"
                logger.critical(
                    "the end of a job can be recorded neither in its store nor in the job-ends file; it may resume at the next start",
                    metadata: metadata)
            }
        }
        removeSpoolFile(of: record)
        for hook in finishHooks { await hook(record) }
        ending[record.id] = nil
        publish(record)
        metrics.jobFinished(record.state.rawValue)
        var metadata: Logger.Metadata = [
            LogKey.jobID: "\(record.id)", LogKey.store: "\(record.store)",
            LogKey.state: "\(record.state.rawValue)"
        ]
        if let error = record.error { metadata["ERROR"] = "\(error)" }
        logger.log(level: record.state == .failed ? .error : .info, "job finished", metadata: metadata)
    }

    /// Persists a record whose failure to persist cannot stop anything (a
    /// state found at start): reported, and the state shows anyway.
    private func persistLogged(_ record: JobRecord, in store: any StoreBackend) async {
        do {
            try await persist(record, in: store)
        } catch {
            logger.error(
                "cannot record a job's state",
                metadata: [
                    LogKey.jobID: "\(record.id)", LogKey.store: "\(store.name)",
                    LogKey.state: "\(record.state.rawValue)",
                    LogKey.error: "\(error)"
                ])
        }
    }

    private func persist(_ record: JobRecord, in store: any StoreBackend) async throws {
        await recordUnrecordedEnds(in: store)
        try await store.jobs.put(record)
    }

    /// Writes to `store` the ends it could not record before; each one
    /// recorded leaves the ledger.
    private func recordUnrecordedEnds(in store: any StoreBackend) async {
        for (id, end) in unrecordedEnds where end.record.store == store.name {
            do {
                try await store.jobs.put(end.record)
                unrecordedEnds[id] = nil
                ledger.clear(slot: end.slot)
                logger.notice(
                    "the end of a job is recorded in its store at last",
                    metadata: [LogKey.jobID: "\(id)", LogKey.store: "\(store.name)"])
            } catch {
                return
            }
        }
    }
}

/// A job's interruption (a cancel, the shutdown): it cancels the job's
/// run under way, or the next one at once.
final class Interruption: Sendable {
    private let state = Mutex<(run: Task<JobRecord?, any Error>?, interrupted: Bool)>((nil, false))

    func started(_ run: Task<JobRecord?, any Error>) {
        let interrupted = state.withLock {
            $0.run = run
            return $0.interrupted
        }
        if interrupted { run.cancel() }
    }

    func interrupt() {
        state.withLock {
            $0.interrupted = true
            return $0.run
        }?.cancel()
    }
}

/// A flag one task sets and another reads.
final class SharedFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
