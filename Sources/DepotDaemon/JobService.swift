import DepotEngine
import Foundation
import Logging
import ServiceLifecycle

/// Runs the jobs (``JobManager/run()``, each job a child task) and their
/// shutdown: on SIGTERM, stop taking jobs, let running ones reach their next
/// save (their checkpoints stay), stop the streamed answers, close the stores.
struct JobService: Service {
    let runtime: DaemonRuntime
    let notifier: SystemdNotifier

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await runtime.jobs.run() }
            try? await gracefulShutdown()
            notifier.stopping()
            runtime.logger.info("stopping: running jobs finish their current save")
            await runtime.watcher.stop()
            await runtime.jobs.shutdown()
        }
        // Streamed answers stop reading (their connections would keep each
        // store's WAL beside its file), then the stores close.
        BytePipe.running.stopAll()
        for store in runtime.jobs.stores.all { try? await store.close() }
    }
}
