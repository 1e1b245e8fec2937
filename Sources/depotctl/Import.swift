import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Import: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import a CSV, TSV, NDJSON or JSON file into an entity, and follow the job to its end.",
        discussion: """
            The file is sent to the daemon, which keeps it on disk and imports it as a job \
            (it survives restarts). depotctl follows the job with a progress bar and exits \
            non-zero when it fails; --detach prints the job's id and returns at once. \
            Records that do not fit are rejected one by one: see them with \
            `depotctl job ID --rejects`. Ctrl-C stops following; the job carries on. \
            With --create the daemon first reads the file whole (as depotctl infer does), \
            creates the entity from it when the store has none of that name (kept in the \
            store across restarts, listed as declared "api"), and imports with the dialect \
            it found; options given here take precedence.

            Example:
              depotctl import trips.csv --store travel --entity Trip
              depotctl import big.ndjson --store travel --entity Trip --on-conflict skip --detach
              depotctl import export.csv --store travel --entity Trip --delimiter ';' --nulls NA,-
              depotctl import data.csv --store travel --entity Data --create
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

    @Option(
        name: .customLong("on-conflict"),
        help:
            "What a record whose identifier is stored already does: upsert (merge, the default), replace, skip, or fail the job."
    )
    var onConflict: String?

    @Option(
        name: .customLong("max-rejects"),
        help:
            "How many rejected records fail the job: a count (1000, the default), a fraction (0.01) or a percentage (1%)."
    )
    var maxRejects: String?

    @Option(
        help:
            "A reference to a record that does not exist: check (reject the row, the default) or defer (keep it; depotctl check lists those that stay dangling)."
    )
    var references: String?

    @Option(help: "The file's delimiter: one character, \\t for a tab (default , or a tab for TSV).")
    var delimiter: String?

    @Option(help: "The file's quote: \" (the default) or '.")
    var quote: String?

    @Option(help: "The escape before a quote inside a quoted field: \\ (as infer detects it; default none).")
    var escape: String?

    @Flag(name: .customLong("no-header"), help: "The file's first record is data; its columns are field_1, field_2….")
    var noHeader = false

    @Option(help: "strict (RFC 4180, the default) or lenient: a quote inside an unquoted field is text.")
    var quotes: String?

    @Flag(name: .customLong("skip-initial-space"), help: "Drop the spaces after each delimiter (a, \"b, c\").")
    var skipInitialSpace = false

    @Option(help: "Spellings read as null in fields that are not strings, comma-separated (NA,-).")
    var nulls: String?

    @Option(help: "The file's encoding: utf-8 (the default) or latin-1.")
    var encoding: String?

    @Option(
        name: .customLong("column"),
        help: ArgumentHelp(
            "A column whose name is not its field's, as COLUMN=FIELD (repeat it for each).",
            valueName: "column=field"))
    var columns: [String] = []

    @Flag(
        help:
            "Read the file whole first, create the entity from it when the store has none of that name (kept in the store), and import with the dialect found (see depotctl infer)."
    )
    var create = false

    @Flag(help: "Print the job's id and return at once instead of following it.")
    var detach = false

    @Flag(
        name: .customLong("by-path"),
        help:
            "Let the daemon read the file where it lies instead of sending it; the file must be under the daemon's import_roots."
    )
    var byPath = false

    func validate() throws {
        if let format, !["csv", "tsv", "ndjson", "jsonl", "json"].contains(format) {
            throw ValidationError("--format must be csv, tsv, ndjson or json, not \"\(format)\".")
        }
        if let onConflict, !["upsert", "replace", "skip", "fail"].contains(onConflict) {
            throw ValidationError("--on-conflict must be upsert, replace, skip or fail, not \"\(onConflict)\".")
        }
        if let references, !["check", "defer"].contains(references) {
            throw ValidationError("--references must be check or defer, not \"\(references)\".")
        }
        if let quotes, !["strict", "lenient"].contains(quotes) {
            throw ValidationError("--quotes must be strict or lenient, not \"\(quotes)\".")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        let url = URL(fileURLWithPath: file)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw Failure("\(file) is not a file depotctl can find; check the path")
        }
        let ext = url.pathExtension.lowercased()
        guard
            let format = format.map({ $0 == "jsonl" ? "ndjson" : $0 })
                ?? ["csv": "csv", "tsv": "tsv", "tab": "tsv", "ndjson": "ndjson", "jsonl": "ndjson", "json": "json"][
                    ext]
        else {
            throw Failure(
                "cannot tell the format of \(file) from its extension; pass --format csv, tsv, ndjson or json")
        }
        var options = ImportOptions(
            format: ImportOptions.Format(rawValue: format),
            onConflict: onConflict.flatMap(ImportOptions.ConflictPolicy.init),
            maxRejects: maxRejects, references: references)
        options.delimiter = delimiter
        options.quote = quote
        options.escape = escape
        options.header = noHeader ? false : nil
        options.quotes = quotes
        options.skipInitialSpace = skipInitialSpace ? true : nil
        options.nulls = nulls.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        options.encoding = encoding
        if !columns.isEmpty {
            var map: [String: String] = [:]
            for pair in columns {
                guard let eq = pair.lastIndex(of: "="), eq != pair.startIndex else {
                    throw Failure("--column takes COLUMN=FIELD, not \"\(pair)\"")
                }
                map[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
            }
            options.columns = map
        }
        if create {
            guard !byPath else { throw Failure("--create sends the file; it does not go with --by-path") }
            options.create = true
        }
        let job =
            byPath
            ? try await client.importFile(url.standardizedFileURL.path, store: store, entity: entity, options: options)
            : try await client.upload(file: url.path, store: store, entity: entity, options: options)
        if detach {
            if global.json {
                try Out.json(job)
            } else {
                Out.line(job.id)
                if Terminal.isTTY { Out.error("follow it with: depotctl follow \(job.id)") }
            }
            return
        }
        let id = job.id
        Interrupt.onInterrupt(status: 130) {
            if Terminal.isTTY { Out.write(1, "\r\u{1B}[K") }
            Out.error(
                "depotctl: stopped following; job \(id) carries on in the daemon (depotctl follow \(id), depotctl cancel \(id))"
            )
        }
        let last = try await JobFlow.follow(client, id, quiet: global.json)
        var described = ""
        if create, !global.json, let info = try? await client.store(store).entities.first(where: { $0.name == entity })
        {
            described =
                "\nentity \(entity) (declared \(info.declared)): identifier \(info.identifier.joined(separator: ", ")); "
                + info.fields.map { "\($0.name) \($0.type)" }.joined(separator: ", ")
        }
        try JobFlow.finish(last, json: global.json) { job in
            var line = "imported \(url.lastPathComponent) into \(store).\(entity): \(job.summary)"
            if job.rate > 0 { line += " (\(Format.grouped(Int(min(job.rate, 1e15)))) rows/s)" }
            line += described
            if job.rejected > 0 {
                line += "\nthe rejected records, with their lines and reasons: depotctl job \(job.id) --rejects"
            }
            return line
        }
    }
}
