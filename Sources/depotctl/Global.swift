import ArgumentParser
import DepotClient
import DepotVersion
import Foundation

/// Options every command takes.
struct Global: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The path of the daemon's control socket; without it, $DEPOT_SOCKET, else /run/depot/depot.sock.",
            valueName: "path"))
    var socket: String?

    @Flag(help: "Print JSON for scripts instead of tables: one document, or one object per line for streams.")
    var json = false

    var socketPath: String {
        socket ?? ProcessInfo.processInfo.environment["DEPOT_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/run/depot/depot.sock"
    }

    var client: DaemonClient {
        var client = DaemonClient(socketPath: socketPath)
        client.userAgent = "depotctl/" + DepotVersion.current
        return client
    }

    /// `--socket S` / `--socket=S` and `--json` given before the subcommand,
    /// moved after it, where every command's options are read (swift-argument-parser
    /// does not hand a parent's options to its subcommands). A `--` ends the
    /// options: what follows it stays where it is.
    static func movingLeadingOptions(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var rest = arguments[...]
        while let first = rest.first {
            if first == "--socket", rest.count >= 2 {
                leading += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--socket=") || first == "--json" {
                leading.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        guard !leading.isEmpty else { return arguments }
        var moved = Array(rest)
        let end = moved.firstIndex(of: "--") ?? moved.endIndex
        moved.insert(contentsOf: leading, at: end)
        return moved
    }
}
