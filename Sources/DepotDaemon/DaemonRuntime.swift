package import DepotEngine
import DepotPostgres
import Foundation
import Hummingbird
import HummingbirdCore
package import Logging

/// What the services share: the configuration, the open stores, the jobs
/// and the watched folders.
package final class DaemonRuntime: Sendable {
    /// The configuration the daemon started with.
    package let config: DaemonConfig
    /// The configuration now, as the last reload left it.
    package let settings: LiveSettings
    package let jobs: JobManager
    package let metrics: Metrics
    package let logger: Logger
    package let watcher: FolderWatcher
    /// The control socket's connection caps (``ConnectionLimits``).
    let limits: ConnectionLimits

    init(config: DaemonConfig, jobs: JobManager, metrics: Metrics, logger: Logger, watcher: FolderWatcher) {
        self.config = config
        self.settings = LiveSettings(config)
        let files = Self.raiseFileLimit(logger: logger)
        // Room for what else the daemon opens: stores and their WALs, job
        // files, uploads, inotify (issue #35).
        let total = min(config.maxConnections, max(16, files - 256))
        if total < config.maxConnections {
            logger.warning(
                "max_connections is lowered to fit the open-files limit",
                metadata: [
                    LogKey.maxConnections: "\(total)", LogKey.nofile: "\(files)"
                ])
        }
        self.limits = ConnectionLimits(total: total, perClient: min(config.maxConnectionsPerClient, total))
        self.jobs = jobs
        self.metrics = metrics
        self.logger = logger
        self.watcher = watcher
    }

    /// Raises the soft limit of open files to the hard one (the unit sets
    /// both with `LimitNOFILE`; elsewhere the soft limit is often 1,024,
    /// which 1,100 idle connections used up: issue #35); the limit now.
    static func raiseFileLimit(logger: Logger) -> Int {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return 1_024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 {
                limit = raised
            } else {
                logger.warning(
                    "cannot raise the open-files limit",
                    metadata: [
                        LogKey.nofile: "\(limit.rlim_cur)", LogKey.hard: "\(limit.rlim_max)",
                        LogKey.error: "\(String(cString: strerror(errno)))"
                    ])
            }
        }
        return Int(min(limit.rlim_cur, rlim_t(Int32.max)))
    }

    /// Opens every store (migrating it), resumes unfinished jobs and starts
    /// watching folders.
    package static func start(config: DaemonConfig, metrics: Metrics, logger: Logger) async throws -> DaemonRuntime {
        try FileManager.default.createDirectory(atPath: config.stateDir, withIntermediateDirectories: true)
        let jobs = JobManager(stateDir: config.stateDir, logger: logger, metrics: metrics)
        for storeConfig in config.stores {
            try await openStore(storeConfig, into: jobs, logger: logger)
        }
        await jobs.removeOrphanSpoolFiles()
        let watcher = FolderWatcher(jobs: jobs, logger: logger)
        let runtime = DaemonRuntime(config: config, jobs: jobs, metrics: metrics, logger: logger, watcher: watcher)
        await jobs.onFinish { record in await watcher.jobFinished(record) }
        for watch in config.watches { try await watcher.add(watch) }
        return runtime
    }

    /// Opens a store with its backend (DESIGN §15); from then on the
    /// daemon speaks only the engine's contract (``StoreBackend``).
    static func openStore(_ storeConfig: StoreConfiguration, into jobs: JobManager, logger: Logger) async throws {
        let store = try await openBackend(storeConfig)
        try await jobs.add(store: store)
        logger.info("store open", metadata: [LogKey.store: "\(storeConfig.name)", LogKey.path: "\(store.location)"])
    }

    /// Opens a store on its backend, not yet serving it.
    package static func openBackend(_ storeConfig: StoreConfiguration) async throws -> any StoreBackend {
        let store: any StoreBackend
        if let postgres = storeConfig.postgres {
            var configuration = PostgresStoreConfiguration(
                name: storeConfig.name, location: try PostgresLocation(postgres), entities: storeConfig.entities,
                saveEvery: storeConfig.saveEvery, saveInterval: storeConfig.saveInterval,
                historyRetention: storeConfig.historyRetention)
            configuration.lease = postgres.lease
            configuration.historyMaxRetention = storeConfig.historyMaxRetention
            configuration.historyPruneStep = storeConfig.historyPruneStep
            store = try await PostgresStore.open(configuration)
        } else {
            let folder = URL(fileURLWithPath: storeConfig.path).deletingLastPathComponent().path
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw DepotError(
                    .database,
                    "store \(JSONText.quoted(storeConfig.name)) cannot open \(storeConfig.path): "
                        + "its folder cannot be created (\((error as NSError).localizedFailureReason ?? error.localizedDescription))"
                )
            }
            store = try await Store.open(storeConfig)
        }
        return store
    }

    /// The HTTP/1.1 settings of the control socket: the idle timeout, the
    /// header limits and the connection counter of the metrics.
    var httpConfiguration: HTTP1Channel.Configuration {
        let (metrics, limits, logger, config) = (self.metrics, self.limits, self.logger, self.config)
        return HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                ConnectionGuard(
                    limits: limits, headTimeout: config.idleTimeout,
                    bodyTimeout: config.bodyTimeout, metrics: metrics, logger: logger), HangUpWatcher()
            ],
            idleTimeout: .seconds(Int64(config.idleTimeout.components.seconds)),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: ConnectionGuard.maxFieldBytes, maxHeaderListSize: 64 * 1024,
                maxHeaderFieldCount: 100))
    }

    /// The control API on a socket systemd handed in.
    func adoptedServer(descriptor: Int32, notifier: SystemdNotifier) -> AdoptedSocketServer {
        let routes = ControlRoutes(settings: settings, jobs: jobs, metrics: metrics, logger: logger, watcher: watcher)
        return AdoptedSocketServer(
            descriptor: descriptor, responder: routes.router().buildResponder(), http: httpConfiguration,
            logger: logger, onRunning: { notifier.ready() })
    }

    /// The HTTP application on the control socket.
    func application(notifier: SystemdNotifier) -> some ApplicationProtocol {
        let routes = ControlRoutes(settings: settings, jobs: jobs, metrics: metrics, logger: logger, watcher: watcher)
        let socket = config.socket
        let mode = config.socketMode
        let group = config.socketGroup
        let logger = self.logger
        try? FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: socket).deletingLastPathComponent().path,
            withIntermediateDirectories: true)
        return Application(
            router: routes.router(),
            server: .http1(configuration: httpConfiguration),
            configuration: .init(address: .unixDomainSocket(path: socket), serverName: "depotd"),
            onServerRunning: { _ in
                if chmod(socket, mode_t(mode)) != 0 {
                    logger.error(
                        "cannot set the control socket's mode",
                        metadata: [
                            LogKey.path: "\(socket)", LogKey.mode: "\(String(mode, radix: 8))",
                            LogKey.error: "\(String(cString: strerror(errno)))"
                        ])
                }
                if let group {
                    if let gr = getgrnam(group), chown(socket, uid_t.max, gr.pointee.gr_gid) == 0 {
                    } else {
                        logger.error(
                            "cannot give the control socket to its group",
                            metadata: [LogKey.path: "\(socket)", LogKey.group: "\(group)"])
                    }
                }
                logger.info("listening", metadata: [LogKey.path: "\(socket)"])
                notifier.ready()
            },
            logger: logger)
    }
}
