import ArgumentParser
import DepotVersion
import Foundation

@main
struct DepotCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "depotctl",
        abstract: "Drive depotd, the Depot daemon, over its control socket.",
        discussion: """
            depotctl imports files into Depot's stores, follows jobs, queries records, \
            computes statistics, finds duplicates and reads the stores' history. It talks \
            HTTP to depotd over the daemon's Unix socket: --socket, else $DEPOT_SOCKET, \
            else /run/depot/depot.sock. --socket and --json go before the command or after it.

            Output is for people by default (aligned tables, a progress bar on a terminal); \
            --json prints JSON for scripts (one document, or NDJSON for streams). \
            The exit status is 0 on success, 64 for a command-line mistake and 1 for any \
            other failure, whose reason goes to stderr.

            Example:
              depotctl import trips.csv --store travel --entity Trip
              depotctl fetch travel Trip --where "budget > 1000" --sort -budget --limit 5
              depotctl --socket /srv/depot/depot.sock status
            """,
        version: DepotVersion.current,
        subcommands: [
            Status.self, Import.self, Jobs.self, JobCommand.self, Follow.self, Cancel.self,
            Fetch.self, Count.self, IDs.self, Stats.self, Duplicates.self, Delete.self, Update.self, Revert.self,
            Backup.self,
            Export.self, Save.self, Get.self, SetFields.self, Remove.self, Check.self, History.self, Consumers.self,
            ConsumerCommand.self, Processors.self, Watches.self, Infer.self, Migrate.self, Console.self
        ])

    /// Reads the command line with the options every command takes
    /// (`--socket`, `--json`) accepted before the subcommand too, as
    /// `docker -H` or `git -C` are (DESIGN §6).
    static func main() async {
        await main(Global.movingLeadingOptions(Array(CommandLine.arguments.dropFirst())))
    }
}

extension String {
    /// Percent-encoded for a URL path segment or query value.
    var encoded: String {
        addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? self
    }
}

/// Comma-separated lists: "a,b" → ["a", "b"].
func commaList(_ text: String?) -> [String]? {
    text.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
}
