import ArgumentParser
import DepotClient
import Foundation

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store while it serves, or list the copies in a folder.",
        discussion: """
            `depotctl backup STORE` writes a consistent copy of an SQLite store at one token, \
            while reads, saves and jobs go on, as a job: into backup_dir, or --to a new file \
            (or a folder) under backup_dir or an import root. Beside the copy, NAME.json names \
            the store, the token, the time, the records of each entity, the size and the \
            SHA-256. --verify checks the copy before it takes its name. A copy is never \
            written over a file, and a copy under its final name is whole.

            Example:
              depotctl backup travel
              depotctl backup travel --to /srv/backups/before-cleanup.sqlite --verify
              depotctl backup list /var/lib/depot/backups
            """,
        subcommands: [BackupCreate.self, BackupList.self],
        defaultSubcommand: BackupCreate.self)
}

struct BackupCreate: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Copy a store while it serves (the default of depotctl backup).",
        discussion: """
            Example:
              depotctl backup travel --verify
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to copy.", valueName: "store")) var store: String
    @Option(
        help: ArgumentHelp(
            "The new file (or a folder for it) on the daemon's machine; backup_dir when left out.",
            valueName: "path"))
    var to: String?
    @Flag(help: "Check the copy (SQLite's integrity check, the records counted again) before it takes its name.")
    var verify = false

    func execute(_ client: DaemonClient) async throws {
        var request = JobRequest(kind: "backup", store: store)
        // The daemon takes absolute paths: a relative one is the caller's folder's.
        request.settings.path = to.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        if verify { request.settings.verify = true }
        let accepted = try await client.submit(request)
        let last = try await JobFlow.follow(client, accepted.id, quiet: global.json)
        try JobFlow.finish(last, json: global.json) { job in
            guard let manifest = job.backup else { return "backed up \(store) (job \(job.id))" }
            return "backed up \(store) at token \(manifest.token ?? "none") to \(job.path ?? manifest.file): "
                + "\(Format.bytes(manifest.bytes)), "
                + manifest.entities.sorted { $0.key < $1.key }.map { "\(Format.grouped($0.value)) \($0.key)" }
                .joined(separator: ", ") + (manifest.verified ? "; verified" : "")
        }
    }
}

struct BackupList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the backups in a folder: store, token, time, size, whether verified.",
        discussion: """
            Reads the manifests (NAME.json) in the folder, on this machine, newest first. A copy \
            missing, of another size than its manifest says, or named outside the folder is marked.

            Example:
              depotctl backup list /var/lib/depot/backups
            """)
    @Argument(help: ArgumentHelp("The folder of backups.", valueName: "path")) var path: String
    @Flag(help: "Print one JSON object per backup (its manifest, and `problem` when there is one).")
    var json = false

    func run() async throws {
        let entries: [BackupFolder.Entry]
        do {
            entries = try BackupFolder.entries(in: path)
        } catch {
            throw Failure("cannot read the folder \(path): \(error.localizedDescription)")
        }
        var table = Table(["FILE", "STORE", "TOKEN", "TIME", "SIZE", "VERIFIED", "PROBLEM"], rightAligned: [2, 4])
        for entry in entries {
            let (manifest, problem) = (entry.manifest, entry.problem?.description)
            if json {
                var object =
                    try JSONSerialization.jsonObject(with: JSONEncoder().encode(manifest)) as? [String: Any] ?? [:]
                if let problem { object["problem"] = problem }
                Out.line(
                    String(
                        decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
                        as: UTF8.self))
            } else {
                table.add([
                    manifest.file, manifest.store, manifest.token ?? "-", Format.date(manifest.time),
                    Format.bytes(manifest.bytes), manifest.verified ? "yes" : "no", problem ?? ""
                ])
            }
        }
        if !json {
            guard !table.rows.isEmpty else {
                Out.line("no backups in \(path)")
                return
            }
            Out.line(table.render())
        }
    }
}
