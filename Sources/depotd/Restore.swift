import ArgumentParser
import DepotDaemon
import DepotEngine
import DepotWire
import Foundation

/// `depotd restore`: a backup put back as a store's file, with the daemon
/// stopped (the daemon may be what broke), checked before it takes the
/// store's name (DESIGN §20).
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put a backup back as a store's file, with depotd stopped.",
        discussion: """
            --from names a backup (its manifest NAME.json beside it) or a folder of backups, \
            from which --latest or --to-token picks one of the store's. The copy is checked \
            against its manifest (size, SHA-256) as it is read, then its records are counted (and \
            with --verify SQLite's integrity check runs), before it takes the store's name; a damaged backup \
            is named and nothing is written. The store's file (from the configuration, or \
            --into) is replaced only with --force, and never while a process (depotd) has it open. \
            Restoring to a time or to before a job needs the store's archive, which is not \
            built yet.

            Example:
              systemctl stop depotd
              depotd restore --from /var/lib/depot/backups --store travel --latest --force
              depotd restore --from /var/lib/depot/backups --store travel --to-token 1042 --into /tmp/t.sqlite
            """)

    /// The configuration, which names the store's file.
    @OptionGroup var options: ConfigOption
    var config: String { options.config }
    @Option(name: .customLong("from"), help: "A backup, or a folder of backups.")
    var from: String
    @Option(help: "The store whose backup to restore (needed when the folder holds several stores' backups).")
    var store: String?
    @Flag(help: "The newest backup of the store in the folder.")
    var latest = false
    @Option(name: .customLong("to-token"), help: "The backup of the store at this token.")
    var toToken: String?
    @Option(help: "The store as it was at this time (needs the store's archive; not built yet).")
    var at: String?
    @Option(
        name: .customLong("before-job"), help: "The store as it was before this job (needs the archive; not built yet)."
    )
    var beforeJob: String?
    @Option(help: "The file to write; the store's file from the configuration when left out.")
    var into: String?
    @Flag(help: "Replace the file if it exists (the store must not be open).")
    var force = false
    @Flag(help: "Also run SQLite's integrity check on the restored file (it reads every page again).")
    var verify = false

    func validate() throws {
        if at != nil || beforeJob != nil {
            throw ValidationError(
                "--at and --before-job need the store's archive ([store.archive]), which is not built yet; "
                    + "restore a backup with --latest or --to-token.")
        }
        if latest && toToken != nil { throw ValidationError("give --latest or --to-token, not both.") }
    }

    func run() async throws {
        do {
            let (path, manifest) = try pick()
            let target = try into ?? storeFile(of: manifest.store)
            // Never under a process that has the file open: it would go on with its own pages.
            if let holder = Self.holders(of: target).first {
                throw DepotError(
                    .conflict,
                    "\(target) is open in process \(holder.pid) (\(holder.name)): stop it first "
                        + "(systemctl stop depotd; with socket activation, systemctl stop depotd.socket depotd.service, "
                        + "or a connection starts it again), or restore into another file with --into")
            }
            let restored = try await BackupRestore.restore(
                from: path, into: target, store: manifest.store, force: force)
            let counts = restored.entities.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            print(
                "restored \(restored.store) at token \(restored.token ?? "none") from \(path) into \(target): "
                    + counts.joined(separator: ", ") + "; checked: size, SHA-256, "
                    + (verify ? "integrity, " : "") + "counts")
        } catch let error as DepotError {
            FileHandle.standardError.write(Data("depotd restore: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The backup to restore, and its manifest.
    private func pick() throws -> (String, BackupManifest) {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: from, isDirectory: &isFolder) else {
            throw DepotError(.invalidArgument, "\(from) is not there")
        }
        guard isFolder.boolValue else {
            let manifest = try BackupRestore.manifest(of: from)
            if let store, manifest.store != store {
                throw DepotError(.invalidArgument, "\(from) is a backup of store \(manifest.store), not of \(store)")
            }
            if let toToken, manifest.token != toToken {
                throw DepotError(.invalidArgument, "\(from) is at token \(manifest.token ?? "none"), not \(toToken)")
            }
            return (from, manifest)
        }
        guard latest || toToken != nil else {
            throw DepotError(.invalidArgument, "\(from) is a folder: say which backup, --latest or --to-token T")
        }
        let all = BackupRestore.backups(in: from, store: store)
        let stores = Set(all.map(\.manifest.store))
        guard stores.count <= 1 else {
            throw DepotError(
                .invalidArgument,
                "\(from) holds backups of \(stores.sorted().joined(separator: ", ")): name one with --store")
        }
        guard let newest = all.first else {
            throw DepotError(.invalidArgument, "\(from) holds no backup" + (store.map { " of store \($0)" } ?? ""))
        }
        guard let toToken else { return (newest.path, newest.manifest) }
        guard let found = all.first(where: { $0.manifest.token == toToken }) else {
            let tokens = all.compactMap { $0.manifest.token.flatMap(Int64.init) }.sorted()
            throw DepotError(
                .invalidArgument,
                "no backup of \(newest.manifest.store) at token \(toToken) in \(from): it holds "
                    + (tokens.isEmpty
                        ? "none with a token"
                        : "tokens \(tokens.map(String.init).joined(separator: ", ")) (earliest \(tokens.first!), latest \(tokens.last!))")
                    + "; a restore to any token needs the store's archive, which is not built yet")
        }
        return (found.path, found.manifest)
    }

    /// The file of store `name` in the configuration.
    private func storeFile(of name: String) throws -> String {
        let daemon: DaemonConfig
        do {
            daemon = try DaemonConfig.load(path: config)
        } catch {
            throw DepotError(.invalidArgument, "\(error) (or name the file to write with --into)")
        }
        guard let store = daemon.stores.first(where: { $0.name == name }) else {
            throw DepotError(.invalidArgument, "store \(name) is not in \(config): name the file to write with --into")
        }
        guard store.postgres == nil else {
            throw DepotError(
                .invalidArgument, "store \(name) is on PostgreSQL, which restores it (docs/postgresql.md)")
        }
        return store.path
    }

    /// The processes that hold the file at `path`, or its WAL, open (read
    /// from /proc, so that asking starts nothing: a connection to a socket
    /// systemd holds would start depotd), each its pid and name.
    static func holders(of path: String) -> [(pid: Int32, name: String)] {
        let real =
            realpath(path, nil).map { p -> String in
                defer { free(p) }
                return String(cString: p)
            } ?? path
        let files: Set<String> = [real, real + "-wal", real + "-shm"]
        var found: [(pid: Int32, name: String)] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), pid != getpid(),
                let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(entry)/fd")
            else { continue }
            let holds = fds.contains {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/fd/\($0)"))
                    .map(files.contains) ?? false
            }
            guard holds else { continue }
            let name = (try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8)) ?? "?"
            found.append((pid, name.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        return found
    }
}
