package import DepotEngine
import Foundation
package import Hummingbird
package import HummingbirdCore
package import Logging
package import NIOCore
package import ServiceLifecycle
import UnixSignals

/// `depotd`: the stores, the job runner, the control server, the folder
/// watcher and the systemd notifier, as services of one `ServiceGroup`.
package enum Daemon {
    /// Sets up logging for the daemon's process.
    package static func bootstrapLogging(level: String) {
        let parsed = Logger.Level(rawValue: level) ?? .info
        LoggingSystem.bootstrap { label in ServiceLogHandler(label: label, level: parsed) }
    }

    /// Runs until SIGTERM or SIGINT, then stops taking work, lets running
    /// jobs reach their next save and exits.
    package static func run(configPath: String) async throws {
        let config = try DaemonConfig.load(path: configPath)
        bootstrapLogging(level: config.logLevel)
        let logger = Logger(label: "depotd")
        let notifier = SystemdNotifier()
        let metrics = Metrics()
        let runtime = try await DaemonRuntime.start(config: config, metrics: metrics, logger: logger)
        let server: any Service = if let fd = SocketActivation.inheritedSocket() {
            runtime.adoptedServer(descriptor: fd, notifier: notifier)
        } else {
            runtime.application(notifier: notifier)
        }
        var groupConfig = ServiceGroupConfiguration(
            services: [
                .init(service: server),
                .init(service: runtime.watcher),
                .init(service: SystemdService(runtime: runtime, notifier: notifier, logger: logger)),
                .init(service: ReloadService(runtime: runtime, configPath: configPath, notifier: notifier, logger: logger)),
                .init(service: JobService(runtime: runtime, notifier: notifier)),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: logger)
        groupConfig.maximumGracefulShutdownDuration = .seconds(25)
        try await ServiceGroup(configuration: groupConfig).run()
        logger.info("depotd stopped")
    }
}

/// What the services share: the configuration, the open stores, the jobs
/// and the watched folders.
package final class DaemonRuntime: Sendable {
    package let config: DaemonConfig
    package let jobs: JobManager
    package let metrics: Metrics
    package let logger: Logger
    package let watcher: FolderWatcher

    init(config: DaemonConfig, jobs: JobManager, metrics: Metrics, logger: Logger, watcher: FolderWatcher) {
        self.config = config
        self.jobs = jobs
        self.metrics = metrics
        self.logger = logger
        self.watcher = watcher
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

    static func openStore(_ storeConfig: StoreConfiguration, into jobs: JobManager, logger: Logger) async throws {
        let folder = URL(fileURLWithPath: storeConfig.path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try await Store.open(storeConfig)
        try await jobs.add(store: store)
        logger.info("store open", metadata: ["STORE": "\(storeConfig.name)", "PATH": "\(storeConfig.path)"])
    }

    /// The HTTP/1.1 settings of the control socket: the idle timeout, the
    /// header limits and the connection counter of the metrics.
    var httpConfiguration: HTTP1Channel.Configuration {
        let metrics = self.metrics
        return HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionCounter(metrics: metrics)],
            idleTimeout: .seconds(Int64(config.idleTimeout.components.seconds)),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 64 * 1024, maxHeaderFieldCount: 100))
    }

    /// The control API on a socket systemd handed in.
    func adoptedServer(descriptor: Int32, notifier: SystemdNotifier) -> AdoptedSocketServer {
        let routes = ControlRoutes(config: config, jobs: jobs, metrics: metrics, logger: logger, watcher: watcher)
        return AdoptedSocketServer(descriptor: descriptor, responder: routes.router().buildResponder(), http: httpConfiguration,
                                   logger: logger, onRunning: { notifier.ready() })
    }

    /// The HTTP application on the control socket.
    func application(notifier: SystemdNotifier) -> some ApplicationProtocol {
        let routes = ControlRoutes(config: config, jobs: jobs, metrics: metrics, logger: logger, watcher: watcher)
        let socket = config.socket
        let mode = config.socketMode
        let group = config.socketGroup
        let logger = self.logger
        try? FileManager.default.createDirectory(atPath: URL(fileURLWithPath: socket).deletingLastPathComponent().path,
                                                 withIntermediateDirectories: true)
        return Application(
            router: routes.router(),
            server: .http1(configuration: httpConfiguration),
            configuration: .init(address: .unixDomainSocket(path: socket), serverName: "depotd"),
            onServerRunning: { _ in
                if chmod(socket, mode_t(mode)) != 0 {
                    logger.error("cannot set the control socket's mode", metadata: [
                        "PATH": "\(socket)", "MODE": "\(String(mode, radix: 8))", "ERROR": "\(String(cString: strerror(errno)))"])
                }
                if let group {
                    if let gr = getgrnam(group), chown(socket, uid_t.max, gr.pointee.gr_gid) == 0 {
                    } else {
                        logger.error("cannot give the control socket to its group", metadata: ["PATH": "\(socket)", "GROUP": "\(group)"])
                    }
                }
                logger.info("listening", metadata: ["PATH": "\(socket)"])
                notifier.ready()
            },
            logger: logger)
    }
}

/// Runs the jobs (``JobManager/run()``, each job a child task) and their
/// shutdown: on SIGTERM, stop taking jobs, let running ones reach their next
/// save (their checkpoints stay), close the stores.
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
        for name in await runtime.jobs.storeNames {
            if let store = await runtime.jobs.store(name) { try? await store.close() }
        }
    }
}

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
        for name in await runtime.jobs.storeNames {
            guard let store = await runtime.jobs.store(name) else { continue }
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
