import ArgumentParser
import Foundation
import NIOHTTP1

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
        version: "0.1.0",
        subcommands: [
            Status.self, Import.self, Jobs.self, JobCommand.self, Follow.self, Cancel.self,
            Fetch.self, Count.self, IDs.self, Stats.self, Duplicates.self, Delete.self, Update.self,
            Export.self, History.self, Watches.self,
        ])

    /// Reads the command line with the options every command takes
    /// (`--socket`, `--json`) accepted before the subcommand too, as
    /// `docker -H` or `git -C` are (DESIGN §6).
    static func main() async {
        await main(Global.movingLeadingOptions(Array(CommandLine.arguments.dropFirst())))
    }
}

/// Options every command takes.
struct Global: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The path of the daemon's control socket; without it, $DEPOT_SOCKET, else /run/depot/depot.sock.",
        valueName: "path"))
    var socket: String?

    @Flag(help: "Print JSON for scripts instead of tables: one document, or one object per line for streams.")
    var json = false

    var socketPath: String {
        socket ?? ProcessInfo.processInfo.environment["DEPOT_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/run/depot/depot.sock"
    }

    var client: DaemonClient { DaemonClient(socketPath: socketPath) }

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

/// A command that talks to the daemon: its failures become one line on
/// stderr and exit status 1.
protocol DepotCommand: AsyncParsableCommand {
    var global: Global { get }
    /// The predicate the command sends, to mark where a predicate error is.
    var predicate: String? { get }
    func execute(_ client: DaemonClient) async throws
}

extension DepotCommand {
    var predicate: String? { nil }

    mutating func run() async throws {
        do {
            try await execute(global.client)
        } catch var failure as Failure {
            if failure.caret != nil, let predicate { failure.caret?.text = predicate }
            report(failure)
            throw ExitCode(1)
        }
    }

    func report(_ failure: Failure) {
        let prefix = Terminal.stderrIsTTY && Terminal.colors ? "\u{1B}[31mdepotctl:\u{1B}[0m" : "depotctl:"
        Out.error("\(prefix) \(failure.message)")
        if let caret = failure.caret, !caret.text.isEmpty {
            Out.error("  " + caret.text.replacingOccurrences(of: "\n", with: " "))
            Out.error("  " + String(repeating: " ", count: max(0, caret.position - 1)) + "^")
        }
    }
}

/// Ctrl-C: live commands end cleanly (exit 0) after tidying the terminal.
enum Interrupt {
    nonisolated(unsafe) private static var source: (any DispatchSourceSignal)?

    static func onInterrupt(status: Int32 = 0, _ handler: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        let s = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        s.setEventHandler {
            handler()
            exit(status)
        }
        s.resume()
        source = s
    }
}

/// A job as the daemon reports it.
struct Job: Decodable {
    var id: String
    var kind: String
    var store: String
    var entity: String?
    var state: String
    var author: String
    var created: String
    var started: String?
    var finished: String?
    var path: String?
    var format: String?
    var error: String?
    var rejects: String?
    var watchFile: String?
    var read = 0, inserted = 0, updated = 0, unchanged = 0, skipped = 0, duplicates = 0
    var rejected = 0, deleted = 0, exported = 0, saves = 0
    var bytesRead = 0, bytesTotal = 0
    var rate = 0.0
    var eta: Double?

    var isFinal: Bool { ["succeeded", "failed", "cancelled"].contains(state) }

    static func decode(_ text: String) throws -> Job {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(Job.self, from: Data(text.utf8))
        } catch {
            throw Failure("the daemon sent a job record depotctl cannot read: \(error)")
        }
    }

    /// What the job did, in one line.
    var summary: String {
        var parts: [String] = []
        switch kind {
        case "import":
            parts = ["\(Format.grouped(read)) read", "\(Format.grouped(inserted)) inserted", "\(Format.grouped(updated)) updated",
                     "\(Format.grouped(unchanged)) unchanged"]
            if skipped > 0 { parts.append("\(Format.grouped(skipped)) skipped") }
            if duplicates > 0 { parts.append("\(Format.grouped(duplicates)) repeated in the file") }
            parts.append("\(Format.grouped(rejected)) rejected")
        case "delete", "dedupe": parts = ["\(Format.grouped(deleted)) deleted"]
        case "update": parts = ["\(Format.grouped(updated)) updated", "\(Format.grouped(unchanged)) unchanged"]
        case "export": parts = ["\(Format.grouped(exported)) exported"]
        default: parts = ["\(Format.grouped(deleted)) pruned"]
        }
        return parts.joined(separator: ", ")
    }
}

/// Submitting a job, following it to its end, reporting how it ended.
enum JobFlow {
    /// Submits a job; returns its record's JSON text.
    static func submit(_ client: DaemonClient, _ body: [String: JSONValue]) async throws -> String {
        let bytes = try await client.call(.POST, "/v1/jobs",
                                          body: .bytes(Array(JSONValue.object(body).text.utf8), contentType: "application/json"))
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Follows a job's events to its end; shows progress unless `quiet`.
    /// Every event goes to `onEvent` (for NDJSON output). Returns the last
    /// record and its JSON text.
    static func follow(_ client: DaemonClient, _ id: String, quiet: Bool,
                       onEvent: ((String) -> Void)? = nil) async throws -> (Job, String) {
        let display = quiet ? nil : ProgressDisplay()
        var last: (Job, String)?
        try await client.lines(.GET, "/v1/jobs/\(id)/events") { line in
            let job = try Job.decode(line)
            last = (job, line)
            onEvent?(line)
            if job.isFinal { return false }
            display?.show(job)
            return true
        }
        display?.clear()
        guard let last else { throw Failure("the daemon ended job \(id)'s events without its end; see depotctl job \(id)") }
        guard last.0.isFinal else { throw Failure("the daemon stopped before job \(id) ended; it resumes when the daemon starts again") }
        return last
    }

    /// Prints how a job ended and fails when it did not succeed.
    static func finish(_ job: Job, text: String, json: Bool, human: (Job) -> String) throws {
        if json {
            Out.line(text)
        } else if job.state == "succeeded" {
            Out.line(human(job))
        }
        switch job.state {
        case "succeeded": return
        case "cancelled": throw Failure("job \(job.id) was cancelled (\(job.summary) before that)")
        default: throw Failure("job \(job.id) failed: \(job.error ?? "no reason given")")
        }
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
