import ArgumentParser
import DepotDaemon
import DepotEngine
import DepotPostgres
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

            A store on PostgreSQL is restored by PostgreSQL (a base backup and its archived WAL): \
            --store S --to-token T, without --from, prints the recovery target that brings the \
            cluster back to token T (the PostgreSQL transaction that committed it). It opens the store as depotd \
            does (the tables of an older release brought up to this one) and changes no record.

            Example:
              systemctl stop depotd
              depotd restore --from /var/lib/depot/backups --store travel --latest --force
              depotd restore --from /var/lib/depot/backups --store travel --to-token 1042 --into /tmp/t.sqlite
              depotd restore --store orders --to-token 5230
            """)

    /// The configuration, which names the store's file.
    @OptionGroup var options: ConfigOption
    var config: String { options.config }
    @Option(
        name: .customLong("from"),
        help: "A backup, or a folder of backups (left out for a store on PostgreSQL, which restores it).")
    var from: String?
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
        if from == nil && (store == nil || toToken == nil) {
            throw ValidationError(
                "--from names the backup to restore; without it, --store S --to-token T names a store on "
                    + "PostgreSQL and the token to recover it to.")
        }
        if from == nil && (into != nil || force || verify) {
            throw ValidationError(
                "--into, --force and --verify are for a backup's file (--from); a store on PostgreSQL is "
                    + "recovered by PostgreSQL, and --store S --to-token T only names where to stop.")
        }
    }

    func run() async throws {
        do {
            guard let from else { return try await postgresTarget() }
            let (path, manifest) = try pick(from)
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
    private func pick(_ from: String) throws -> (String, BackupManifest) {
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

    /// For a store on PostgreSQL: the recovery target of a point-in-time
    /// recovery of its cluster to `--to-token` (DESIGN §20), printed as the
    /// settings to give the restored cluster. The store is opened as depotd
    /// opens it (an older release's tables brought up to this one); no
    /// record changes.
    private func postgresTarget() async throws {
        guard let name = store, let text = toToken else { return }
        guard let token = Int64(text), token > 0 else {
            throw DepotError(.invalidArgument, "--to-token \(text) is not a token (a whole number from 1)")
        }
        let storeConfig = try configuration(of: name, hint: "")
        guard storeConfig.postgres != nil else {
            throw DepotError(
                .invalidArgument,
                "store \(name) is an SQLite file: restore one of its backups with --from (depotd restore --help)")
        }
        let backend = try await DaemonRuntime.openBackend(storeConfig)
        guard let postgres = backend as? PostgresStore else { return }
        let target: (xid: Int64, lastToken: Int64)
        do {
            target = try await postgres.recoveryTarget(token: token)
        } catch {
            await postgres.close()
            throw error
        }
        await postgres.close()
        let commit =
            target.lastToken == token
            ? "token \(token) is the last of its commit"
            : "its commit holds the tokens after it through \(target.lastToken) (saves that shared one commit); "
                + "a recovery cannot stop inside a commit, so the store comes back at token \(target.lastToken)"
        print(
            """
            store \(name) (\(postgres.configuration.location.description)) committed token \(token) in PostgreSQL \
            transaction \(target.xid); \(commit).
            Recover a base backup of the cluster taken before it, with its archived WAL (restore_command), and:
              recovery_target_xid = '\(target.xid)'
              recovery_target_inclusive = on
              recovery_target_action = 'promote'
            then create recovery.signal in the restored data folder and start the server (docs/postgresql.md, "Backups").
            """)
    }

    /// Store `name`'s `[[store]]` in the configuration; `hint` says what
    /// else the user may do when it cannot be read or has no such store.
    private func configuration(of name: String, hint: String) throws -> StoreConfiguration {
        let daemon: DaemonConfig
        do {
            daemon = try DaemonConfig.load(path: config)
        } catch {
            throw DepotError(.invalidArgument, "\(error)" + (hint.isEmpty ? "" : " (or \(hint))"))
        }
        guard let store = daemon.stores.first(where: { $0.name == name }) else {
            throw DepotError(.invalidArgument, "store \(name) is not in \(config)" + (hint.isEmpty ? "" : ": \(hint)"))
        }
        return store
    }

    /// The file of store `name` in the configuration.
    private func storeFile(of name: String) throws -> String {
        let store = try configuration(of: name, hint: "name the file to write with --into")
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
