import ArgumentParser
import DepotClient
import Foundation

struct Infer: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read a CSV, TSV, NDJSON or JSON file whole and print the entity that holds it.",
        discussion: """
            The file is sent to the daemon, which reads all of it (memory stays flat \
            whatever its size) and prints a [[store.entity]] to paste into depot.toml: the \
            dialect (delimiter, quote, header, encoding, line ends), each field's type from \
            every value, with the line and value that widened it as a comment \
            (# int until line 1,001 ("1.5")), the null spellings met (NA, N/A, NULL, -), and \
            the identifier: the unique, never-null fields (then pairs, then triples), or \
            _key computed from each record's values when none is. Column names that are \
            not valid field names are renamed, each rename shown. Records an import would \
            reject (ragged rows) are listed with their lines. --json prints one document.

            Example:
              depotctl infer bookings.csv
              depotctl infer export.ndjson --entity Booking --json
            """)
    @OptionGroup var global: Global

    @Argument(help: ArgumentHelp("The file to read.", valueName: "file"))
    var file: String

    @Option(help: "The entity's name (default: from the file's name, trips.csv gives Trips).")
    var entity: String?

    @Option(help: "The file's format: csv, tsv, ndjson or json. Without it, the extension or the first byte decides.")
    var format: String?

    func validate() throws {
        if let format, !["csv", "tsv", "ndjson", "jsonl", "json"].contains(format) {
            throw ValidationError("--format must be csv, tsv, ndjson or json, not \"\(format)\".")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw Failure("\(file) is not a file depotctl can find; check the path")
        }
        let answer = try await client.infer(
            file: file, entity: entity, format: format.map { $0 == "jsonl" ? "ndjson" : $0 })
        if global.json {
            try Out.json(answer)
        } else {
            Out.write(1, answer.toml)
        }
    }
}
