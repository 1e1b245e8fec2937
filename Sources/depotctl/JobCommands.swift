import ArgumentParser
import Foundation
import NIOHTTP1

struct Status: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether the daemon runs, its stores and its jobs.",
        discussion: """
            Prints each store with its entities, their record counts and the latest \
            history token, and how many jobs run and wait.

            Example:
              depotctl status
              depotctl status --json | jq '.stores[].name'
            """)
    @OptionGroup var global: Global

    func execute(_ client: DaemonClient) async throws {
        let health = String(decoding: try await client.call(.GET, "/v1/health"), as: UTF8.self)
        let storesText = String(decoding: try await client.call(.GET, "/v1/stores"), as: UTF8.self)
        if global.json {
            Out.line("{\"socket\":\(JSONValue.quoted(global.socketPath)),\"health\":\(health.trimmed),\"stores\":\(storesText.trimmed)}")
            return
        }
        struct Health: Decodable {
            struct Counts: Decodable { var running: Int; var queued: Int }
            var status: String
            var jobs: Counts
        }
        let h = try JSONDecoder().decode(Health.self, from: Data(health.utf8))
        let stores = try JSONDecoder().decode(StoreList.self, from: Data(storesText.utf8)).stores
        Out.line("depotd at \(global.socketPath): \(h.status)")
        var table = Table(["STORE", "ENTITY", "RECORDS", "TOKEN", "FILE"], rightAligned: [2, 3])
        for store in stores {
            for entity in store.entities {
                table.add([store.name, entity.name, Format.grouped(entity.count), store.token ?? "-", store.path])
            }
        }
        Out.line(table.render())
        Out.line("jobs: \(h.jobs.running) running, \(h.jobs.queued) queued")
    }
}

struct Import: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import a CSV, TSV, NDJSON or JSON file into an entity, and follow the job to its end.",
        discussion: """
            The file is sent to the daemon, which keeps it on disk and imports it as a job \
            (it survives restarts). depotctl follows the job with a progress bar and exits \
            non-zero when it fails; --detach prints the job's id and returns at once. \
            Records that do not fit are rejected one by one: see them with \
            `depotctl job ID --rejects`. Ctrl-C stops following; the job carries on.

            Example:
              depotctl import trips.csv --store travel --entity Trip
              depotctl import big.ndjson --store travel --entity Trip --on-conflict skip --detach
            """)
    @OptionGroup var global: Global

    @Argument(help: ArgumentHelp("The file to import.", valueName: "file"))
    var file: String

    @Option(help: "The store to import into, as named in the daemon's configuration.")
    var store: String

    @Option(help: "The entity (table) of the store the records belong to.")
    var entity: String

    @Option(help: "The file's format: csv, tsv, ndjson or json. Without it, the file's extension decides.")
    var format: String?

    @Option(name: .customLong("on-conflict"),
            help: "What a record whose identifier is stored already does: upsert (merge, the default), replace, skip, or fail the job.")
    var onConflict: String?

    @Option(name: .customLong("max-rejects"),
            help: "How many rejected records fail the job: a count (1000, the default), a fraction (0.01) or a percentage (1%).")
    var maxRejects: String?

    @Flag(help: "Print the job's id and return at once instead of following it.")
    var detach = false

    @Flag(name: .customLong("by-path"),
          help: "Let the daemon read the file where it lies instead of sending it; the file must be under the daemon's import_roots.")
    var byPath = false

    func validate() throws {
        if let format, !["csv", "tsv", "ndjson", "jsonl", "json"].contains(format) {
            throw ValidationError("--format must be csv, tsv, ndjson or json, not \"\(format)\".")
        }
        if let onConflict, !["upsert", "replace", "skip", "fail"].contains(onConflict) {
            throw ValidationError("--on-conflict must be upsert, replace, skip or fail, not \"\(onConflict)\".")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        let url = URL(fileURLWithPath: file)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw Failure("\(file) is not a file depotctl can find; check the path")
        }
        let ext = url.pathExtension.lowercased()
        guard let format = format.map({ $0 == "jsonl" ? "ndjson" : $0 })
                ?? ["csv": "csv", "tsv": "tsv", "tab": "tsv", "ndjson": "ndjson", "jsonl": "ndjson", "json": "json"][ext] else {
            throw Failure("cannot tell the format of \(file) from its extension; pass --format csv, tsv, ndjson or json")
        }
        let accepted: String
        if byPath {
            var body: [String: JSONValue] = ["kind": .string("import"), "store": .string(store), "entity": .string(entity),
                                             "path": .string(url.standardizedFileURL.path), "format": .string(format)]
            if let onConflict { body["on_conflict"] = .string(onConflict) }
            if let maxRejects { body["max_rejects"] = .string(maxRejects) }
            accepted = try await JobFlow.submit(client, body)
        } else {
            var query = "format=\(format)"
            if let onConflict { query += "&on_conflict=\(onConflict.encoded)" }
            if let maxRejects { query += "&max_rejects=\(maxRejects.encoded)" }
            let type = format == "csv" ? "text/csv" : format == "tsv" ? "text/tab-separated-values" : "application/x-ndjson"
            let bytes = try await client.call(.POST, "/v1/stores/\(store.encoded)/entities/\(entity.encoded)/import?\(query)",
                                              body: .file(path: url.path, contentType: type))
            accepted = String(decoding: bytes, as: UTF8.self).trimmed
        }
        let job = try Job.decode(accepted)
        if detach {
            if global.json { Out.line(accepted) } else {
                Out.line(job.id)
                if Terminal.isTTY { Out.error("follow it with: depotctl follow \(job.id)") }
            }
            return
        }
        let id = job.id
        Interrupt.onInterrupt(status: 130) {
            if Terminal.isTTY { Out.write(1, "\r\u{1B}[K") }
            Out.error("depotctl: stopped following; job \(id) carries on in the daemon (depotctl follow \(id), depotctl cancel \(id))")
        }
        let (last, text) = try await JobFlow.follow(client, id, quiet: global.json)
        try JobFlow.finish(last, text: text, json: global.json) { job in
            var line = "imported \(url.lastPathComponent) into \(store).\(entity): \(job.summary)"
            if job.rate > 0 { line += " (\(Format.grouped(Int(min(job.rate, 1e15)))) rows/s)" }
            if job.rejected > 0 { line += "\nthe rejected records, with their lines and reasons: depotctl job \(job.id) --rejects" }
            return line
        }
    }
}

struct Jobs: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the daemon's jobs, oldest first.",
        discussion: """
            Shows every job the daemon knows: imports, deletes, updates, dedupes, exports \
            and prunes, with their state and how far they got.

            Example:
              depotctl jobs
              depotctl jobs --json | jq '.jobs[] | select(.state == "failed")'
            """)
    @OptionGroup var global: Global

    func execute(_ client: DaemonClient) async throws {
        let bytes = try await client.call(.GET, "/v1/jobs")
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        struct List: Decodable { var jobs: [JSONValue] }
        let jobs = try JSONDecoder().decode(List.self, from: Data(bytes)).jobs.map { try Job.decode($0.text) }
        var table = Table(["ID", "KIND", "STORE", "ENTITY", "STATE", "ROWS", "REJECTED", "CREATED", "SOURCE"], rightAligned: [5, 6])
        for j in jobs {
            let rows = j.kind == "import" ? j.read : j.deleted + j.updated + j.exported
            table.add([j.id, j.kind, j.store, j.entity ?? "", Terminal.state(j.state), Format.grouped(rows),
                       j.kind == "import" ? Format.grouped(j.rejected) : "", Format.date(j.created),
                       j.watchFile.map { URL(fileURLWithPath: $0).lastPathComponent } ?? j.author])
        }
        Out.line(jobs.isEmpty ? "no jobs yet" : table.render())
    }
}

struct JobCommand: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "job",
        abstract: "Show one job, or the records it rejected.",
        discussion: """
            Shows the job's state, counters, timing and error. With --rejects, prints the \
            records an import rejected: their line numbers, fields and reasons.

            Example:
              depotctl job j90467cda1cb6
              depotctl job j90467cda1cb6 --rejects
            """)
    @OptionGroup var global: Global

    @OptionGroup var job: JobID
    var id: String { job.id }

    @Flag(help: "Print the records the import rejected, with their line numbers and reasons, instead of the job.")
    var rejects = false

    func execute(_ client: DaemonClient) async throws {
        if rejects {
            var table = Table(["LINE", "FIELD", "REASON", "VALUE"], rightAligned: [0])
            var count = 0
            try await client.lines(.GET, "/v1/jobs/\(id.encoded)/rejects") { line in
                count += 1
                if global.json { Out.line(line); return true }
                let r = (try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))) ?? .null
                table.add([r["line"]?.int.map(String.init) ?? "", r["field"]?.string ?? "", r["reason"]?.string ?? "",
                           r["value"]?.string ?? ""])
                return true
            }
            if !global.json { Out.line(count == 0 ? "job \(id) rejected no records" : table.render()) }
            return
        }
        let text = String(decoding: try await client.call(.GET, "/v1/jobs/\(id.encoded)"), as: UTF8.self).trimmed
        if global.json { Out.line(text); return }
        let j = try Job.decode(text)
        var rows: [(String, String)] = [("id", j.id), ("kind", j.kind), ("store", j.store + (j.entity.map { ".\($0)" } ?? "")),
                                        ("state", Terminal.state(j.state)), ("author", j.author), ("created", Format.date(j.created))]
        if let s = j.started { rows.append(("started", Format.date(s))) }
        if let f = j.finished { rows.append(("finished", Format.date(f))) }
        if let p = j.path { rows.append(("file", p)) }
        rows.append(("did", j.summary))
        if j.kind == "import", j.bytesTotal > 0 {
            rows.append(("read", "\(Format.grouped(j.bytesRead)) of \(Format.grouped(j.bytesTotal)) bytes, \(RecordPrinter.plural(j.saves, "save"))"))
        }
        if j.rate > 0 { rows.append(("rate", "\(Format.grouped(Int(min(j.rate, 1e15)))) rows/s")) }
        if let e = j.error { rows.append(("error", e)) }
        if let r = j.rejects { rows.append(("rejects", "\(r) (depotctl job \(j.id) --rejects)")) }
        let width = rows.map(\.0.count).max() ?? 0
        for (k, v) in rows { Out.line(Terminal.bold(k.padding(toLength: width, withPad: " ", startingAt: 0)) + "  " + v) }
    }
}

struct Follow: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow a job's progress until it ends.",
        discussion: """
            Shows a progress bar on a terminal (plain lines otherwise) and how the job \
            ended; exits non-zero when it failed. With --json, prints each event as a line \
            of JSON. Ctrl-C stops following; the job carries on.

            Example:
              depotctl follow j90467cda1cb6
            """)
    @OptionGroup var global: Global

    @OptionGroup var job: JobID
    var id: String { job.id }

    func execute(_ client: DaemonClient) async throws {
        Interrupt.onInterrupt { if Terminal.isTTY { Out.write(1, "\r\u{1B}[K") } }
        let json = global.json
        let (last, _) = try await JobFlow.follow(client, id, quiet: json, onEvent: json ? { Out.line($0) } : nil)
        if !json { Out.line("job \(last.id) \(Terminal.state(last.state)): \(last.summary)") }
        switch last.state {
        case "succeeded": return
        case "cancelled": throw Failure("job \(last.id) was cancelled")
        default: throw Failure("job \(last.id) failed: \(last.error ?? "no reason given")")
        }
    }
}

struct Cancel: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a job: at once if it waits, at its next save if it runs.",
        discussion: """
            What a running job saved before it stops stays saved; an import's checkpoint \
            goes with it.

            Example:
              depotctl cancel j90467cda1cb6
            """)
    @OptionGroup var global: Global

    @OptionGroup var job: JobID
    var id: String { job.id }

    func execute(_ client: DaemonClient) async throws {
        let text = String(decoding: try await client.call(.DELETE, "/v1/jobs/\(id.encoded)"), as: UTF8.self).trimmed
        if global.json { Out.line(text); return }
        let j = try Job.decode(text)
        switch j.state {
        case "cancelled": Out.line("job \(j.id) cancelled")
        case "running": Out.line("job \(j.id) stops at its next save (depotctl follow \(j.id) to see it end)")
        default: Out.line("job \(j.id) had already ended: \(j.state)")
        }
    }
}

struct Watches: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the watched folders and their files waiting, done and failed.",
        discussion: """
            Each [[watch]] of the daemon's configuration: the folder, the store and entity \
            it feeds, and how many of its files wait for their import, were imported \
            (in .done/) or failed (in .failed/, each with NAME.error.json saying why).

            Example:
              depotctl watches
            """)
    @OptionGroup var global: Global

    func execute(_ client: DaemonClient) async throws {
        let bytes = try await client.call(.GET, "/v1/watches")
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let watches = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["watches"]?.array ?? []
        var table = Table(["FOLDER", "FEEDS", "FORMAT", "ON CONFLICT", "WAITING", "DONE", "FAILED"], rightAligned: [4, 5, 6])
        for w in watches {
            table.add([w["path"]?.string ?? "", "\(w["store"]?.string ?? "").\(w["entity"]?.string ?? "")",
                       w["format"]?.string ?? "", w["on_conflict"]?.string ?? "", w["pending"]?.display ?? "",
                       w["done"]?.display ?? "", w["failed"]?.display ?? ""])
        }
        Out.line(watches.isEmpty ? "no watched folders ([[watch]] in the daemon's configuration adds one)" : table.render())
    }
}

/// `GET /v1/stores`.
struct StoreList: Decodable {
    struct Store: Decodable {
        struct Entity: Decodable {
            struct Field: Decodable { var name: String; var type: String }
            var name: String
            var count: Int
            var identifier: [String]
            var fields: [Field]
        }
        var name: String
        var path: String
        var token: String?
        var entities: [Entity]
    }
    var stores: [Store]
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// The job a command is about.
struct JobID: ParsableArguments {
    @Argument(help: ArgumentHelp("The job's id, as depotctl jobs shows it.", valueName: "id"))
    var id: String
}
