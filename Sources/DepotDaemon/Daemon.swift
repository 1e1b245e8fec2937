import Foundation
import Logging
import ServiceLifecycle
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
        let server: any Service =
            if let fd = SocketActivation.inheritedSocket() {
                runtime.adoptedServer(descriptor: fd, notifier: notifier)
            } else {
                runtime.application(notifier: notifier)
            }
        var groupConfig = ServiceGroupConfiguration(
            services: [
                .init(service: server),
                .init(service: runtime.watcher),
                .init(service: SystemdService(runtime: runtime, notifier: notifier, logger: logger)),
                .init(
                    service: ReloadService(runtime: runtime, configPath: configPath, notifier: notifier, logger: logger)
                ),
                .init(service: JobService(runtime: runtime, notifier: notifier)),
                .init(service: RetentionService(runtime: runtime, notifier: notifier)),
                .init(service: BackupScheduleService(runtime: runtime)),
                .init(service: FiguresService(runtime: runtime))
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: logger)
        groupConfig.maximumGracefulShutdownDuration = .seconds(25)
        try await ServiceGroup(configuration: groupConfig).run()
        logger.info("depotd stopped")
    }
}
