import DepotEngine
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// `SIGHUP` re-reads the configuration: new stores open and new watches
/// start; running jobs carry on. A configuration with errors is refused
/// whole and the daemon keeps the one it runs.
struct ReloadService: Service {
    let runtime: DaemonRuntime
    let configPath: String
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            notifier.reloading()
            await reload()
            notifier.ready()
        }
    }

    func reload() async {
        do {
            let fresh = try DaemonConfig.load(path: configPath)
            let open = Set(await runtime.jobs.storeNames)
            for store in fresh.stores where !open.contains(store.name) {
                try await DaemonRuntime.openStore(store, into: runtime.jobs, logger: logger)
            }
            for watch in fresh.watches { try await runtime.watcher.add(watch) }
            logger.info("configuration reloaded", metadata: ["PATH": "\(configPath)"])
        } catch {
            logger.error("configuration not reloaded", metadata: ["PATH": "\(configPath)", "ERROR": "\(error)"])
        }
    }
}
