import DepotEngine
package import DepotWire
import Foundation
import ServiceLifecycle
import Synchronization

/// The daemon's own figures over the last hour, a point every `interval`
/// (`GET /v1/figures`, the console's charts, DESIGN §19): rows imported per
/// second, how long saves took, the largest consumer lag. Kept in memory: a
/// restart starts them anew.
package final class Figures: Sendable {
    package static let interval: Duration = .seconds(10)
    /// An hour of points.
    static let kept = 360

    struct Totals {
        var rows = 0
        var saves = 0
        var saveSeconds = 0.0
        var jobSaves = 0
        var jobSaveSeconds = 0.0
        var time = ContinuousClock.now
    }

    private let samples = Mutex<[FigureSample]>([])
    private let last = Mutex<Totals?>(nil)

    package init() {}

    /// A point: the growth of the metrics' totals since the last one, and
    /// the lag read now. The first call only starts the count.
    package func sample(_ metrics: Metrics, consumerLag: Int?) {
        let now = metrics.totals()
        let previous = last.withLock { last -> Totals? in
            defer { last = now }
            return last
        }
        guard let previous else { return }
        let elapsed = (now.time - previous.time).components
        let seconds = max(0.001, Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
        func mean(_ sum: Double, _ count: Int) -> Double? { count > 0 ? sum / Double(count) * 1000 : nil }
        let point = FigureSample(
            time: Timestamp.now(),
            rowsPerSecond: Double(now.rows - previous.rows) / seconds,
            saveMilliseconds: mean(now.saveSeconds - previous.saveSeconds, now.saves - previous.saves),
            saves: now.saves - previous.saves,
            importSaveMilliseconds: mean(
                now.jobSaveSeconds - previous.jobSaveSeconds, now.jobSaves - previous.jobSaves),
            consumerLag: consumerLag)
        samples.withLock { list in
            list.append(point)
            if list.count > Self.kept { list.removeFirst(list.count - Self.kept) }
        }
    }

    package var all: FigureList {
        FigureList(interval: Int(Self.interval.components.seconds), samples: samples.withLock { $0 })
    }
}

/// Takes a point of ``Figures`` every ``Figures/interval``.
struct FiguresService: Service {
    let runtime: DaemonRuntime

    func run() async throws {
        runtime.metrics.figures.sample(runtime.metrics, consumerLag: nil)
        while true {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: Figures.interval) }
            } catch {
                return
            }
            var lag: Int?
            for store in runtime.jobs.stores.all {
                guard let consumers = try? await store.reads.consumers() else { continue }
                for c in consumers { lag = max(lag ?? 0, c.lagTransactions) }
            }
            runtime.metrics.figures.sample(runtime.metrics, consumerLag: lag)
        }
    }
}
