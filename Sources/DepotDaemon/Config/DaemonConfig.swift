package import DepotEngine
package import DepotWire
import Foundation
import TOMLKit

/// The daemon's configuration (DESIGN §8), read from TOML.
///
/// Relative paths resolve against the configuration file's folder, except a
/// store's `path`, which lies inside `state_dir`. Every problem is collected
/// and reported at once, each with its key.
package struct DaemonConfig: Sendable {
    /// One `[[watch]]` folder.
    package struct Watch: Sendable, Hashable {
        package var path: String
        package var store: String
        package var entity: String
        /// `nil` for `auto`: told by each file's extension.
        package var format: ImportOptions.Format?
        package var onConflict: ConflictPolicy
        /// Delete imported files instead of moving them to `.done/`.
        package var deleteAfter: Bool
        package var maxRejects: ImportOptions.RejectLimit
        /// `references = "defer"`: keep references to records not there (yet).
        package var deferReferences = false
        /// The files' dialect, as `depotctl infer` reports it (`delimiter`,
        /// `quote`, `header`, `quotes`, `skip_initial_space`, `nulls`,
        /// `columns`, `encoding`); the fields not given keep their defaults.
        package var dialect = JobSettings()
    }

    package var file: String
    package var stateDir: String
    package var socket: String
    package var socketMode: UInt16
    package var socketGroup: String?
    package var importRoots: [String]
    /// Where a backup goes unless its job names a path (`backup_dir`,
    /// `STATE_DIR/backups` by default; DESIGN §20).
    package var backupDir: String
    package var logLevel: String
    /// The largest upload a client may send, in bytes.
    package var maxUploadBytes: Int64
    /// The largest JSON request body, in bytes.
    package var maxRequestBytes: Int
    /// Connections idle this long are closed.
    package var idleTimeout: Duration
    /// A streamed answer whose client reads none of it for this long is
    /// ended, its connection closed (`stream_write_timeout`).
    package var streamWriteTimeout: Duration = .seconds(30)
    /// A request body must bring 64 KiB or its end at least this often (`body_timeout`).
    package var bodyTimeout: Duration = .seconds(30)
    /// Connections all clients together may hold (`max_connections`).
    package var maxConnections = 16_384
    /// Connections one client (uid) may hold (`max_connections_per_client`).
    package var maxConnectionsPerClient = 4_096
    package var readPrincipals: [Principal]
    package var writePrincipals: [Principal]
    package var stores: [StoreConfiguration]
    package var watches: [Watch]

    /// The configuration error: every problem, each as "key: reason".
    package struct Problems: Error, CustomStringConvertible {
        package var file: String
        package var problems: [String]
        package var description: String {
            problems.map { "\(file): \($0)" }.joined(separator: "\n")
        }
    }

    /// Reads and validates the file at `path`.
    ///
    /// - Throws: ``Problems`` listing everything wrong with it.
    package static func load(path: String) throws -> DaemonConfig {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw Problems(
                file: path,
                problems: ["cannot read the configuration: \(String(describing: error.localizedDescription))"])
        }
        return try parse(text, file: path)
    }

    /// Parses configuration text; `file` names it in errors and anchors relative paths.
    package static func parse(_ text: String, file: String) throws -> DaemonConfig {
        if let problem = TOMLPrecheck.problem(in: text) {
            throw Problems(file: file, problems: [problem])
        }
        // Parsed once where an assertion of toml++ cannot abort depotd:
        // TOMLPrecheck names the typos known to reach one, this the rest.
        if let line = TOMLPrecheck.abortingLine(in: text) {
            throw Problems(
                file: file,
                problems: [
                    "line \(line): not valid TOML: the TOML library stops at an "
                        + "internal check on this line (look for a malformed table header, array, inline table or date-time)"
                ])
        }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw Problems(
                file: file,
                problems: [
                    "line \(error.source.begin.line), column \(error.source.begin.column): "
                        + "not valid TOML: \(error.description)"
                ])
        }
        let folder = URL(fileURLWithPath: file).deletingLastPathComponent().standardizedFileURL.path
        var reader = ConfigReader(folder: folder)
        let config = reader.read(table, file: file)
        if !reader.problems.isEmpty { throw Problems(file: file, problems: reader.problems) }
        return config!
    }
}
