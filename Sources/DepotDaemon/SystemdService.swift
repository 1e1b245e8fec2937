import DepotEngine
import Foundation
import Logging
import ServiceLifecycle

/// `STATUS=` once a second, and `WATCHDOG=1` at half the watchdog interval
/// while every store actor answers a ping.
struct SystemdService: Service {
    let runtime: DaemonRuntime
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        let watchdog = notifier.watchdogInterval
        let tick = min(watchdog ?? .seconds(1), .seconds(1))
        var lastWatchdog = ContinuousClock.now - .seconds(3600)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            notifier.status(await runtime.jobs.runningSummary)
            if let watchdog, ContinuousClock.now - lastWatchdog >= watchdog {
                if await storesAnswer() {
                    notifier.watchdog()
                    lastWatchdog = .now
                } else {
                    logger.error("a store does not answer; withholding the watchdog ping")
                }
            }
            try? await Task.sleep(for: tick)
        }
    }

    /// Whether every store actor answers within a second.
    func storesAnswer() async -> Bool {
        for store in runtime.jobs.stores.all {
            let answered = await withTaskGroup(of: Bool.self) { group in
                group.addTask { (try? await store.ping()) != nil }
                group.addTask {
                    try? await Task.sleep(for: .seconds(1))
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            if !answered { return false }
        }
        return true
    }
}
