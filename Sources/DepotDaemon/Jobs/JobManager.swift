import DepotEngine
import Foundation
import Logging
import Synchronization

/// Runs the jobs: persisted in their store, one at a time per store in FIFO
/// order, stores in parallel; an interrupted job resumes when the daemon
/// starts again, from its last checkpoint.
public actor JobManager {
    private var stores: [String: Store] = [:]
    private var jobs: [String: JobRecord] = [:]
    private var order: [String] = []
    private var queues: [String: [String]] = [:]
    private var running: [String: Task<Void, Never>] = [:]
    private var busy: Set<String> = []
    private var subscribers: [UUID: (job: String?, continuation: AsyncStream<JobRecord>.Continuation)] = [:]
    private var stopping = false
    private let stateDir: String
    private let logger: Logger
    private let metrics: Metrics
    /// Called when a job reaches a final state (watched folders move their file).
    private var finishHooks: [@Sendable (JobRecord) async -> Void] = []

    public init(stateDir: String, logger: Logger, metrics: Metrics) {
        self.stateDir = stateDir
        self.logger = logger
        self.metrics = metrics
    }

    public func onFinish(_ hook: @escaping @Sendable (JobRecord) async -> Void) { finishHooks.append(hook) }

    /// Adds a store and resumes its unfinished jobs.
    ///
    /// A persisted job that cannot run any more (its record does not read
    /// back, or a setting no longer passes ``JobPlan``) is marked failed with
    /// the reason instead of being resumed.
    public func add(store: Store) async throws {
        stores[store.name] = store
        for (id, bytes) in try await store.jobs() {
            var record: JobRecord
            do {
                record = try JSONDecoder().decode(JobRecord.self, from: Data(bytes))
            } catch {
                guard var stub = JobRecord(unreadable: bytes, id: id, store: store.name) else {
                    logger.error("a job record cannot be read and is not resumed",
                                 metadata: ["JOB_ID": "\(id)", "STORE": "\(store.name)", "ERROR": "\(error)"])
                    continue
                }
                stub.error = "the job's record could not be read back, so it was not resumed: "
                    + ((error as? DecodingError).map(JSONBody.describe) ?? "\(error)")
                record = stub
                await persistLogged(record, in: store)
            }
            if jobs[id] == nil { order.append(id) }
            if !record.state.isFinal {
                do {
                    try JobPlan(record).check(against: store.reader)
                    record.state = .queued
                    queues[store.name, default: []].append(id)
                    logger.info("job resumes", metadata: ["JOB_ID": "\(id)", "STORE": "\(store.name)"])
                } catch {
                    record.state = .failed
                    record.finished = Timestamp.now()
                    record.error = "the job cannot resume: " + ((error as? DepotError)?.message ?? "\(error)")
                    logger.error("a persisted job cannot resume and is marked failed",
                                 metadata: ["JOB_ID": "\(id)", "STORE": "\(store.name)", "ERROR": "\(record.error ?? "")"])
                    await persistLogged(record, in: store)
                    removeSpoolFile(of: record)
                }
            }
            jobs[id] = record
        }
        pump(store.name)
    }

    /// Removes the spool files that no unfinished job reads: uploads whose
    /// job ended, or that never became a job (the daemon stopped mid-upload).
    public func removeOrphanSpoolFiles() {
        let folder = stateDir + "/spool"
        let wanted = Set(jobs.values.filter { !$0.state.isFinal }.compactMap(\.path))
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let path = folder + "/" + name
            if !wanted.contains(path) { unlink(path) }
        }
    }

    /// An upload's spool file goes once its job ended, however it ended, so
    /// that failed uploads cannot fill `state_dir`.
    private func removeSpoolFile(of record: JobRecord) {
        if record.kind == .import, record.watchFile == nil, let path = record.path, path.hasPrefix(stateDir + "/spool/") {
            unlink(path)
        }
    }

    public func store(_ name: String) -> Store? { stores[name] }
    public var storeNames: [String] { stores.keys.sorted() }

    public func all() -> [JobRecord] { order.compactMap { jobs[$0] } }
    public func job(_ id: String) -> JobRecord? { jobs[id] }

    public var runningSummary: String {
        let active = order.compactMap { jobs[$0] }.filter { $0.state == .running }
        if active.isEmpty { return "idle; \(stores.count) store\(stores.count == 1 ? "" : "s") open" }
        return active.map(\.summary).joined(separator: "; ")
    }

    /// Persists and queues a job.
    public func submit(_ record: JobRecord) async throws -> JobRecord {
        guard !stopping else { throw DepotError(.storeClosed, "the daemon is stopping and takes no new jobs") }
        guard let store = stores[record.store] else {
            throw DepotError(.unknownEntity, "no store is named \(JSONText.quoted(record.store))"
                + DepotError.suggestion(for: record.store, in: storeNames))
        }
        try await persist(record, in: store)
        jobs[record.id] = record
        order.append(record.id)
        queues[record.store, default: []].append(record.id)
        publish(record)
        metrics.jobSubmitted(record.kind.rawValue)
        pump(record.store)
        return record
    }

    /// Cancels a queued job at once, a running one at its next save.
    public func cancel(_ id: String) async throws -> JobRecord {
        guard var record = jobs[id] else { throw DepotError(.unknownEntity, "no job has id \(JSONText.quoted(id))") }
        switch record.state {
        case .queued:
            queues[record.store]?.removeAll { $0 == id }
            record.state = .cancelled
            record.finished = Timestamp.now()
            try await finish(record)
        case .running:
            running[id]?.cancel()
        default:
            break
        }
        return jobs[id] ?? record
    }

    /// Events of one job (or of all jobs, with `nil`): its record each time it changes.
    /// For one job the stream starts with its current record and ends when it is final.
    public func events(job id: String?) -> AsyncStream<JobRecord> {
        let (stream, continuation) = AsyncStream.makeStream(of: JobRecord.self, bufferingPolicy: .bufferingNewest(64))
        let key = UUID()
        if let id, let record = jobs[id] {
            continuation.yield(record)
            if record.state.isFinal {
                continuation.finish()
                return stream
            }
        }
        subscribers[key] = (id, continuation)
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

    /// Stops taking jobs and lets the running ones reach their next save;
    /// they stay unfinished in their store and resume on the next start.
    public func shutdown() async {
        stopping = true
        let tasks = Array(running.values)
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
        for (_, s) in subscribers { s.continuation.finish() }
        subscribers.removeAll()
    }

    /// Persists a record whose failure to persist cannot stop anything (a
    /// state found at start): reported, and the state shows anyway.
    private func persistLogged(_ record: JobRecord, in store: Store) async {
        do {
            try await persist(record, in: store)
        } catch {
            logger.error("cannot record a job's state", metadata: [
                "JOB_ID": "\(record.id)", "STORE": "\(store.name)", "STATE": "\(record.state.rawValue)", "ERROR": "\(error)"])
        }
    }

    private func persist(_ record: JobRecord, in store: Store) async throws {
        try await store.putJob(id: record.id, record: Array(try JSONEncoder().encode(record)))
    }

    private func update(_ record: JobRecord) {
        jobs[record.id] = record
        publish(record)
    }

    private func finish(_ record: JobRecord) async throws {
        // The end shows even when it cannot be recorded; the error follows.
        var unrecorded: (any Error)?
        do {
            if let store = stores[record.store] { try await persist(record, in: store) }
        } catch {
            unrecorded = error
        }
        removeSpoolFile(of: record)
        // Hooks first (a watched file moves), then the final state shows,
        // in the job list and as the final event.
        for hook in finishHooks { await hook(record) }
        jobs[record.id] = record
        publish(record)
        metrics.jobFinished(record.state.rawValue)
        var metadata: Logger.Metadata = ["JOB_ID": "\(record.id)", "STORE": "\(record.store)",
                                         "STATE": "\(record.state.rawValue)"]
        if let error = record.error { metadata["ERROR"] = "\(error)" }
        logger.log(level: record.state == .failed ? .error : .info, "job finished", metadata: metadata)
        if let unrecorded { throw unrecorded }
    }

    /// Starts the next queued job of `store` when none runs.
    private func pump(_ storeName: String) {
        guard !stopping, !busy.contains(storeName), let store = stores[storeName],
              var queue = queues[storeName], !queue.isEmpty else { return }
        let id = queue.removeFirst()
        queues[storeName] = queue
        guard var record = jobs[id] else { return }
        busy.insert(storeName)
        record.state = .running
        record.started = record.started ?? Timestamp.now()
        update(record)
        let start = record
        running[id] = Task {
            await self.execute(start, store: store)
        }
    }

    private func execute(_ start: JobRecord, store: Store) async {
        var record = start
        // Progress flows through one stream, read in order by one task; the
        // newest report replaces one not yet read. The job's end waits for
        // it, so no progress shows after the final state.
        let (progress, reports) = AsyncStream.makeStream(of: JobRecord.self, bufferingPolicy: .bufferingNewest(1))
        let reader = Task { for await report in progress { self.progressed(report) } }
        defer { reports.finish() }
        do {
            try await persist(record, in: store)
            try await JobExecutor(stateDir: stateDir, store: store, metrics: metrics) { report in
                reports.yield(report)
            }.run(&record)
            record.state = .succeeded
            record.error = nil
        } catch {
            // A cancelled job may end in SQLite's interruption or another
            // error of the step it was in: the cancellation is what happened.
            if error is CancellationError || Task.isCancelled {
                if stopping {
                    // Interrupted by shutdown: stays unfinished, resumes next start.
                    running[record.id] = nil
                    busy.remove(store.name)
                    return
                }
                record.state = .cancelled
            } else {
                record.state = .failed
                record.error = (error as? DepotError)?.message ?? "\(error)"
            }
        }
        reports.finish()
        await reader.value
        record.finished = Timestamp.now()
        if let latest = jobs[record.id] { record.rate = record.rate == 0 ? latest.rate : record.rate }
        do { try await finish(record) } catch {
            logger.error("cannot record the end of a job", metadata: [
                "JOB_ID": "\(record.id)", "STORE": "\(record.store)", "ERROR": "\(error)"])
        }
        running[record.id] = nil
        busy.remove(store.name)
        pump(store.name)
    }

    private func progressed(_ record: JobRecord) {
        guard let current = jobs[record.id], current.state == .running else { return }
        update(record)
    }
}
