import DepotWire
import Testing

@testable import DepotDaemon

/// The job queue's state machine, without I/O, on a manual clock.
@Suite("Job queue")
struct JobQueueTests {
    /// A clock that moves only when the test says so.
    final class ManualClock: @unchecked Sendable {
        var seconds = 0
        func advance(_ by: Int = 1) { seconds += by }
        var now: String { "2026-01-01T00:00:\(seconds < 10 ? "0" : "")\(seconds).000Z" }
    }

    static func job(_ id: String, _ store: String, state: JobRecord.State = .queued, started: String? = nil)
        -> JobRecord
    {
        var r = JobRecord(id: id, kind: .import, store: store, entity: "Trip", author: "test")
        r.state = state
        r.started = started
        return r
    }

    static func started(_ effects: [JobQueue.Effect]) -> [String] {
        effects.compactMap { if case .start(let r) = $0 { r.id } else { nil } }
    }

    static func ended(_ effects: [JobQueue.Effect]) -> [JobRecord] {
        effects.compactMap { if case .ended(let r) = $0 { r } else { nil } }
    }

    @Test("a backup runs beside its store's running job, one backup at a time per store")
    func backupLane() throws {
        var queue = JobQueue(now: { "2026-01-01T00:00:00.000Z" })
        func backup(_ id: String) -> JobRecord {
            JobRecord(id: id, kind: .backup, store: "A", entity: nil, author: "test")
        }
        #expect(Self.started(try queue.submit(Self.job("a1", "A"))) == ["a1"])
        #expect(Self.started(try queue.submit(Self.job("a2", "A"))) == [])
        #expect(Self.started(try queue.submit(backup("k1"))) == ["k1"])
        #expect(Self.started(try queue.submit(backup("k2"))) == [])
        // The import's end starts the next import, not the waiting backup.
        #expect(Self.started(queue.finished("a1", .succeeded(queue.records["a1"]!))) == ["a2"])
        #expect(Self.started(queue.finished("k1", .succeeded(queue.records["k1"]!))) == ["k2"])
        // A waiting backup is cancelled from its own lane.
        #expect(Self.started(try queue.submit(backup("k3"))) == [])
        #expect(Self.ended(try queue.cancel("k3")).map(\.id) == ["k3"])
        #expect(Self.started(queue.finished("k2", .succeeded(queue.records["k2"]!))) == [])
    }

    @Test("one job at a time per store, in FIFO order; stores in parallel; timestamps from the clock")
    func fifoPerStore() throws {
        let clock = ManualClock()
        var queue = JobQueue(now: { clock.now })
        #expect(Self.started(try queue.submit(Self.job("a1", "A"))) == ["a1"])
        #expect(Self.started(try queue.submit(Self.job("a2", "A"))) == [])
        #expect(Self.started(try queue.submit(Self.job("a3", "A"))) == [])
        #expect(Self.started(try queue.submit(Self.job("b1", "B"))) == ["b1"])
        #expect(queue.running(on: "A") == "a1")
        #expect(queue.waiting(on: "A") == ["a2", "a3"])
        #expect(queue.records["a1"]?.started == clock.now)
        clock.advance(5)
        let effects = queue.finished("a1", .succeeded(queue.records["a1"]!))
        #expect(Self.ended(effects).map(\.id) == ["a1"])
        #expect(Self.ended(effects).first?.state == .succeeded)
        #expect(Self.ended(effects).first?.finished == "2026-01-01T00:00:05.000Z")
        #expect(Self.started(effects) == ["a2"])
        #expect(queue.records["a2"]?.started == "2026-01-01T00:00:05.000Z")
        let failed = queue.finished("a2", .failed(queue.records["a2"]!, reason: "no such file"))
        #expect(Self.ended(failed).first?.state == .failed)
        #expect(Self.ended(failed).first?.error == "no such file")
        #expect(Self.started(failed) == ["a3"])
        #expect(queue.all.map(\.id) == ["a1", "a2", "a3", "b1"])
        // An end reported twice, or for a job that does not run, changes nothing.
        #expect(queue.finished("a1", .succeeded(queue.records["a1"]!)).isEmpty)
    }

    @Test(
        "cancel: a waiting job ends at once; a running one is interrupted once, then ends cancelled and the next starts"
    )
    func cancel() throws {
        let clock = ManualClock()
        var queue = JobQueue(now: { clock.now })
        _ = try queue.submit(Self.job("a1", "A"))
        _ = try queue.submit(Self.job("a2", "A"))
        _ = try queue.submit(Self.job("a3", "A"))
        clock.advance()
        let waiting = try queue.cancel("a2")
        #expect(Self.ended(waiting).map(\.state) == [.cancelled])
        #expect(Self.ended(waiting).first?.finished == clock.now)
        #expect(queue.waiting(on: "A") == ["a3"])
        #expect(try queue.cancel("a1") == [.interrupt(id: "a1")])
        #expect(try queue.cancel("a1") == [])
        let effects = queue.finished("a1", .cancelled(queue.records["a1"]!))
        #expect(Self.ended(effects).map(\.state) == [.cancelled])
        #expect(Self.started(effects) == ["a3"])
        // A final job stays as it is; an unknown one is an error.
        #expect(try queue.cancel("a2") == [])
        let error = #expect(throws: JobRefusal.self) { try queue.cancel("nope") }
        #expect(error == .unknownJob("nope"))
        #expect(APIError.answer(to: error!).code == .unknownJob)
    }

    @Test(
        "resume: unfinished jobs of the last run wait again in their order, keep their start time; final ones are listed"
    )
    func resume() {
        let clock = ManualClock()
        clock.advance(30)
        var queue = JobQueue(now: { clock.now })
        #expect(queue.restore(Self.job("old", "A", state: .succeeded)).isEmpty)
        let first = queue.restore(Self.job("r1", "A", state: .running, started: "2025-12-31T23:59:00.000Z"))
        #expect(Self.started(first) == ["r1"])
        #expect(queue.records["r1"]?.started == "2025-12-31T23:59:00.000Z")
        #expect(Self.started(queue.restore(Self.job("q1", "A", state: .queued))).isEmpty)
        #expect(queue.waiting(on: "A") == ["q1"])
        #expect(queue.records["old"]?.state == .succeeded)
        #expect(queue.all.map(\.id) == ["old", "r1", "q1"])
    }

    @Test("stop: running jobs are interrupted and stay unfinished; nothing starts; no new job is taken")
    func stop() throws {
        var queue = JobQueue(now: { "t" })
        _ = try queue.submit(Self.job("a1", "A"))
        _ = try queue.submit(Self.job("a2", "A"))
        _ = try queue.submit(Self.job("b1", "B"))
        #expect(queue.stop() == [.interrupt(id: "a1"), .interrupt(id: "b1")])
        let error = #expect(throws: JobRefusal.self) { try queue.submit(Self.job("c1", "C")) }
        #expect(error == .stopping)
        #expect(APIError.answer(to: error!).code == .storeClosed)
        #expect(queue.finished("a1", nil).isEmpty)
        #expect(queue.records["a1"]?.state.isFinal == false)
        #expect(queue.records["a1"]?.finished == nil)
        #expect(queue.running(on: "A") == nil)
        #expect(queue.waiting(on: "A") == ["a2"])
    }

    @Test("progress counts only while the job runs")
    func progress() throws {
        var queue = JobQueue(now: { "t" })
        _ = try queue.submit(Self.job("a1", "A"))
        _ = try queue.submit(Self.job("a2", "A"))
        var report = queue.records["a1"]!
        report.read = 10
        let accepted = queue.progressed(report)
        #expect(accepted)
        #expect(queue.records["a1"]?.read == 10)
        var early = queue.records["a2"]!
        early.read = 99
        let beforeStart = queue.progressed(early)
        #expect(!beforeStart)
        _ = queue.finished("a1", .succeeded(queue.records["a1"]!))
        report.read = 20
        let afterEnd = queue.progressed(report)
        #expect(!afterEnd)
        #expect(queue.records["a1"]?.read == 10)
    }
}
