import DepotEngine
import DepotWire

/// The job queue as a pure state machine: the jobs the daemon knows, in the
/// order it learnt them; one running job per store, the others of that store
/// waiting in FIFO order, stores in parallel; cancellation; resumption of the
/// jobs a previous run left unfinished; shutdown. A backup waits in a lane
/// of its own beside its store's other jobs: it copies a snapshot while
/// they write (DESIGN §20), and a long import does not hold it back.
///
/// It does no I/O and reads no clock of its own: each transition returns the
/// ``Effect``s for ``JobManager`` to carry out (start a job, interrupt one,
/// record an end), and timestamps come from the clock it is given, so tests
/// drive it step by step with a manual one.
struct JobQueue {
    /// What the owner of the queue must do after a transition.
    enum Effect: Equatable {
        /// Run this job (now `running`) on its store.
        case start(JobRecord)
        /// Interrupt this running job: cancelled by a client, or stopped by
        /// the shutdown, which leaves it to resume on the next start.
        case interrupt(id: String)
        /// This job reached its final state: persist it, announce it.
        case ended(JobRecord)
    }

    /// How a running job's work ended.
    enum Outcome: Equatable {
        case succeeded(JobRecord)
        case failed(JobRecord, reason: String)
        /// Cancelled by a client (an interruption after ``stop()`` instead
        /// leaves the job unfinished).
        case cancelled(JobRecord)

        /// The outcome an ended record says (another host's, or one
        /// already written): any state but succeeded or cancelled failed.
        init(_ ended: JobRecord) {
            switch ended.state {
            case .succeeded: self = .succeeded(ended)
            case .cancelled: self = .cancelled(ended)
            default: self = .failed(ended, reason: ended.error ?? "the job failed on another host")
            }
        }
    }

    private(set) var records: [String: JobRecord] = [:]
    private(set) var order: [String] = []
    private var waiting: [String: [String]] = [:]
    private var running: [String: String] = [:]
    private var cancelling: Set<String> = []
    private(set) var isStopping = false
    private let now: () -> String

    /// - Parameter now: the current time as canonical timestamp text.
    init(now: @escaping () -> String) {
        self.now = now
    }

    /// The lane a job waits and runs in: its store's, or its store's
    /// backups' (``lane(_:)`` of a backup).
    static func lane(_ record: JobRecord) -> String {
        record.kind == .backup ? record.store + "\u{0}backup" : record.store
    }

    /// The job running on `store`, if any.
    func running(on store: String) -> String? { running[store] }
    /// The jobs waiting on `store`, first to run first.
    func waiting(on store: String) -> [String] { waiting[store] ?? [] }
    /// Every job, in the order the daemon learnt of them.
    var all: [JobRecord] { order.compactMap { records[$0] } }

    /// A new job: it waits behind its store's others, or starts now.
    mutating func submit(_ record: JobRecord) throws -> [Effect] {
        guard !isStopping else { throw JobRefusal.stopping }
        var record = record
        record.state = .queued
        remember(record)
        waiting[Self.lane(record), default: []].append(record.id)
        return next(on: Self.lane(record))
    }

    /// A job found in its store at start: an unfinished one waits to run
    /// again (from its checkpoint), a final one is only listed.
    mutating func restore(_ record: JobRecord) -> [Effect] {
        var record = record
        if record.state.isFinal {
            remember(record)
            return []
        }
        record.state = .queued
        remember(record)
        let lane = Self.lane(record)
        if !(waiting[lane] ?? []).contains(record.id) && running[lane] != record.id {
            waiting[lane, default: []].append(record.id)
        }
        return next(on: lane)
    }

    /// Cancels a job: a waiting one ends at once, a running one is
    /// interrupted and ends when its work stops; a final one stays as it is.
    mutating func cancel(_ id: String) throws -> [Effect] {
        guard var record = records[id] else {
            throw JobRefusal.unknownJob(id)
        }
        switch record.state {
        case .queued:
            waiting[Self.lane(record)]?.removeAll { $0 == id }
            record.state = .cancelled
            record.finished = now()
            records[id] = record
            return [.ended(record)]
        case .running:
            guard !cancelling.contains(id) else { return [] }
            cancelling.insert(id)
            return [.interrupt(id: id)]
        case .succeeded, .failed, .cancelled:
            return []
        }
    }

    /// Progress of a running job; ignored once it is no longer running.
    mutating func progressed(_ record: JobRecord) -> Bool {
        guard let current = records[record.id], current.state == .running else { return false }
        var record = record
        record.state = .running
        records[record.id] = record
        return true
    }

    /// A running job's work ended; the next job of its store starts unless
    /// the daemon is stopping. After ``stop()``, an interrupted job stays
    /// unfinished (`nil` outcome) for the next start to resume.
    mutating func finished(_ id: String, _ outcome: Outcome?) -> [Effect] {
        guard var record = records[id], record.state == .running else { return [] }
        let store = Self.lane(record)
        if running[store] == id { running[store] = nil }
        cancelling.remove(id)
        var effects: [Effect] = []
        if let outcome {
            record = ending(outcome)
            records[id] = record
            effects.append(.ended(record))
        } else {
            record.state = .queued
            records[id] = record
        }
        return effects + next(on: store)
    }

    /// The record `outcome` ends its job with: its state, error and end
    /// (the time the outcome gives, or now).
    func ending(_ outcome: Outcome) -> JobRecord {
        var record: JobRecord
        switch outcome {
        case .succeeded(let final):
            record = final
            record.state = .succeeded
            record.error = nil
        case .failed(let final, let reason):
            record = final
            record.state = .failed
            record.error = reason
        case .cancelled(let final):
            record = final
            record.state = .cancelled
        }
        record.finished = record.finished ?? now()
        return record
    }

    /// Stops starting jobs; the running ones are interrupted.
    mutating func stop() -> [Effect] {
        isStopping = true
        return running.values.sorted().map { .interrupt(id: $0) }
    }

    private mutating func remember(_ record: JobRecord) {
        if records[record.id] == nil { order.append(record.id) }
        records[record.id] = record
    }

    /// Starts the first waiting job of `store` when none runs.
    private mutating func next(on store: String) -> [Effect] {
        guard !isStopping, running[store] == nil, var queue = waiting[store], !queue.isEmpty else { return [] }
        let id = queue.removeFirst()
        waiting[store] = queue
        guard var record = records[id] else { return next(on: store) }
        record.state = .running
        record.started = record.started ?? now()
        records[id] = record
        running[store] = id
        return [.start(record)]
    }
}
