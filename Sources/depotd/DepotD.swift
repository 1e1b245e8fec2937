import ArgumentParser
import DepotDaemon
import DepotEngine
import DepotVersion
import Foundation

/// depotd: the Depot service. See README.md and docs/api.md.
@main
struct DepotD: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "depotd",
        abstract: "Keeps data in SQLite stores and does the heavy background work on them.",
        discussion: """
            Runs until SIGTERM or SIGINT; SIGHUP re-reads the configuration.
            Example: depotd --config config/depot.toml
            """,
        version: DepotVersion.current,
        subcommands: [Restore.self])

    @OptionGroup var options: ConfigOption
    var config: String { options.config }

    @Flag(name: .customLong("check-config"), help: "Check the configuration, print what it declares and exit.")
    var checkConfig = false

    func run() async throws {
        ProcessMemory.returnLargeBuffers()
        if checkConfig {
            do {
                let c = try DaemonConfig.load(path: config)
                print("\(config): OK")
                print("  state_dir \(c.stateDir)")
                print("  socket    \(c.socket) (mode \(String(c.socketMode, radix: 8)))")
                print("  backups   \(c.backupDir)")
                for s in c.stores {
                    // A URL may hold a password: only the schema is shown.
                    let place = s.postgres.map { "PostgreSQL schema \($0.schema) (checked at start)" } ?? s.path
                    print("  store \(s.name) at \(place): " + s.entities.map(\.name).joined(separator: ", "))
                    if let b = s.backupSchedule {
                        print("    a backup every \(DurationText.format(b.every)), the newest \(b.keep) kept")
                    }
                }
                for w in c.watches { print("  watch \(w.path) -> \(w.store).\(w.entity)") }
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                throw ExitCode(78)  // EX_CONFIG
            }
            return
        }
        do {
            try await Daemon.run(configPath: config)
        } catch let error as DaemonConfig.Problems {
            FileHandle.standardError.write(Data("<3>\(error)\n".utf8))
            throw ExitCode(78)
        } catch {
            FileHandle.standardError.write(Data("<3>depotd: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// `--config FILE`: the daemon's, and its subcommands' (`depotd restore`).
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "The configuration file (TOML).")
    var config = "/etc/depot/depot.toml"
}
