import DepotEngine
import DepotWire
import Foundation
import Logging
import ServiceLifecycle

/// Applies each store's `history_retention` (and through it
/// `history_max_retention`, DESIGN §11): as soon as the daemon runs (after
/// READY: a first pass over a large backlog must not hold the start back
/// past systemd's timeout), then every `interval`. A prune stops at the
/// oldest transaction an active consumer has not acknowledged, which the log
/// says; each pass ends with a `STATUS=history retention: …` line.
struct RetentionService: Service {
    let runtime: DaemonRuntime
    let notifier: SystemdNotifier
    var interval: Duration = .seconds(3600)

    func run() async throws {
        await Self.pass(runtime, notifier: notifier)
        while true {
            do {
                // Graceful shutdown (SIGTERM) cancels the wait at once.
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return  // the daemon is stopping
            }
            await Self.pass(runtime, notifier: notifier)
        }
    }

    /// Prunes every store that has a retention, logging what each prune did.
    static func pass(_ runtime: DaemonRuntime, notifier: SystemdNotifier) async {
        var summary: [String] = []
        for store in runtime.jobs.stores.all where store.historyRetention != nil {
            let name = store.name
            do {
                let outcome = try await store.applyHistoryRetention()
                log(outcome, store: name, logger: runtime.logger)
                summary.append(
                    "\(name) pruned \(outcome.deleted)"
                        + (outcome.heldBackBy.map { ", held back by \($0.consumer)" } ?? ""))
            } catch {
                runtime.logger.error(
                    "history retention failed", metadata: [LogKey.store: "\(name)", LogKey.error: "\(error)"])
                summary.append("\(name) failed")
            }
        }
        // Sent as is: status() keeps to one a second, and would drop it after a job summary.
        if !summary.isEmpty { _ = notifier.send("STATUS=history retention: " + summary.joined(separator: "; ")) }
    }

    /// The log lines of a prune: what went, who held it back, who was lost.
    static func log(_ outcome: PruneOutcome, store: String, logger: Logger) {
        if outcome.deleted > 0 {
            logger.info("history pruned", metadata: [LogKey.store: "\(store)", LogKey.pruned: "\(outcome.deleted)"])
        }
        if let held = outcome.heldBackBy {
            logger.notice(
                "history prune held back by a consumer",
                metadata: [
                    LogKey.store: "\(store)", LogKey.consumer: "\(held.consumer)", LogKey.token: "\(held.token)"
                ])
        }
        for consumer in outcome.lost {
            logger.warning(
                "consumer lost: history_max_retention pruned what it had not acknowledged",
                metadata: [
                    LogKey.store: "\(store)", LogKey.consumer: "\(consumer)"
                ])
        }
    }
}
