import DepotEngine
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// `SIGHUP` re-reads the configuration, all or nothing (issue #35): new
/// stores open and new watches start, `[access]`, `import_roots`, the
/// request and stream limits apply to every request from then on; running
/// jobs carry on. A configuration with errors, or a store or a folder that
/// cannot open, is refused whole and the daemon keeps the one it runs.
/// What a reload cannot change (the socket, `state_dir`, a store already
/// open) is named in the log and waits for a restart.
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

    static func describe(_ error: any Error) -> String {
        (error as? DepotError)?.message ?? (error as? DaemonConfig.Problems)?.description ?? "\(error)"
    }

    func reload() async {
        let fresh: DaemonConfig
        do {
            fresh = try DaemonConfig.load(path: configPath)
        } catch {
            logger.error(
                "configuration not reloaded; nothing of it applied",
                metadata: [LogKey.path: "\(configPath)", LogKey.error: "\(Self.describe(error))"])
            return
        }
        let current = runtime.settings.current
        let open = Set(runtime.jobs.stores.names)
        // Everything that may fail first, undone whole if any of it fails.
        var opened: [any StoreBackend] = []
        var prepared: [(watch: DaemonConfig.Watch, wd: Int32)] = []
        // Open stores whose entities changed (DESIGN §18): checked here, so
        // that a change no conversion explains refuses the whole reload.
        var changed: [(store: any StoreBackend, entities: [EntitySchema])] = []
        do {
            for config in fresh.stores where open.contains(config.name) {
                guard let store = runtime.jobs.stores.store(config.name),
                    config.entities != store.settings.schema.configured
                else { continue }
                let schema = store.settings.schema
                for target in config.entities where !MigrationPlan.renamesPending(target, in: schema) {
                    _ = try MigrationPlan.preview(target, in: schema)
                }
                changed.append((store, config.entities))
            }
            for store in fresh.stores where !open.contains(store.name) {
                opened.append(try await DaemonRuntime.openBackend(store))
            }
            for watch in fresh.watches {
                if let wd = try await runtime.watcher.prepare(watch) { prepared.append((watch, wd)) }
            }
        } catch {
            for p in prepared { await runtime.watcher.discard(p.wd) }
            for store in opened { try? await store.close() }
            logger.error(
                "configuration not reloaded; nothing of it applied",
                metadata: [LogKey.path: "\(configPath)", LogKey.error: "\(Self.describe(error))"])
            return
        }
        for store in opened {
            do {
                try await runtime.jobs.add(store: store)
                logger.info("store open", metadata: [LogKey.store: "\(store.name)", LogKey.path: "\(store.location)"])
            } catch {
                logger.error(
                    "a new store cannot resume its jobs",
                    metadata: [
                        LogKey.store: "\(store.name)", LogKey.error: "\(Self.describe(error))"
                    ])
            }
        }
        runtime.settings.replace(with: fresh)
        for (store, entities) in changed {
            do {
                try await runtime.jobs.reconfigure(store, entities: entities)
            } catch {
                logger.error(
                    "a store's entities cannot change; it keeps those it had",
                    metadata: [LogKey.store: "\(store.name)", LogKey.error: "\(Self.describe(error))"])
            }
        }
        for p in prepared { await runtime.watcher.start(p.watch, p.wd) }
        var waiting: [String] = []
        if fresh.socket != current.socket || fresh.socketMode != current.socketMode
            || fresh.socketGroup != current.socketGroup
        {
            waiting.append("the socket")
        }
        if fresh.stateDir != current.stateDir { waiting.append("state_dir") }
        if fresh.idleTimeout != current.idleTimeout { waiting.append("idle_timeout") }
        if fresh.logLevel != current.logLevel { waiting.append("log_level") }
        let freshStores = Set(fresh.stores.map(\.name))
        waiting += open.filter { !freshStores.contains($0) }.sorted().map {
            "store \(JSONText.quoted($0)) (removed; still served)"
        }
        let freshWatches = Set(fresh.watches.map(\.path))
        waiting += current.watches.filter { !freshWatches.contains($0.path) }.map {
            "watch \($0.path) (removed; still watched)"
        }
        var metadata: Logger.Metadata = [LogKey.path: "\(configPath)"]
        if !waiting.isEmpty { metadata["UNTIL_RESTART"] = "\(waiting.joined(separator: "; "))" }
        logger.info("configuration reloaded", metadata: metadata)
    }
}
