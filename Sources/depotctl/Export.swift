import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Export: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export records as CSV or NDJSON, to a file or stdout.",
        discussion: """
            Streams the records from one consistent snapshot of the store, in storage \
            order, to the file named by -o (written whole or not at all), or to stdout.

            Example:
              depotctl export travel Trip --where "isFavorite == true" --format csv -o favourites.csv
              depotctl export travel Trip | gzip > trips.ndjson.gz
              depotctl export shop Order --prefetch customer,lines --format csv -o orders.csv

            With --prefetch, each record embeds its related records: as objects and arrays in \
            NDJSON; in CSV a to-one's fields are columns of their own (customer.name) and a \
            to-many is one column holding a JSON array. Such an export runs as a job in the \
            daemon (it shows in depotctl jobs), which then hands over what it wrote.
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to export.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Only the records for which this predicate holds.") var predicateText:
        String?
    @Option(help: "csv, or ndjson (one JSON object per line, the default).") var format = "ndjson"
    @Option(help: "Embed the records of these relationships in each record, comma-separated.") var prefetch: String?
    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of stdout.", valueName: "file"))
    var output: String?
    var predicate: String? { predicateText }

    func validate() throws {
        if !["csv", "ndjson"].contains(format) {
            throw ValidationError("--format must be csv or ndjson, not \"\(format)\".")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        var fd: Int32 = 1
        var temporary: String?
        if let output {
            temporary = output + ".depotctl-\(getpid()).part"
            fd = open(temporary!, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw Failure("cannot write \(output): \(String(cString: strerror(errno)))") }
        }
        let exported: Int
        do {
            exported = prefetch == nil ? try await stream(client, to: fd) : try await job(client, to: fd)
        } catch {
            if let temporary { close(fd); unlink(temporary) }
            throw error
        }
        if let output, let temporary {
            guard fsync(fd) == 0, close(fd) == 0, rename(temporary, output) == 0 else {
                unlink(temporary)
                throw Failure("cannot write \(output): \(String(cString: strerror(errno)))")
            }
            if global.json {
                Out.line(JSONValue.object(["exported": .int(Int64(exported)), "file": .string(output)]).text)
            } else {
                Out.line("exported \(RecordPrinter.plural(exported, "record")) of \(store).\(entity) to \(output)")
            }
        }
    }

    /// `POST .../export`: the daemon writes as it reads, depotctl as it receives.
    func stream(_ client: DaemonClient, to fd: Int32) async throws -> Int {
        var body = ExportBody()
        body.format = format
        body.where = predicateText
        return try await client.export(store: store, entity: entity, body) { chunk in try Self.write(chunk, to: fd) }
    }

    /// An export job, whose output is then copied from the daemon.
    func job(_ client: DaemonClient, to fd: Int32) async throws -> Int {
        var request = JobRequest(kind: "export", store: store, entity: entity)
        request.settings.format = format
        request.settings.where = predicateText
        request.settings.prefetch = commaList(prefetch)
        let accepted = try await client.submit(request)
        // With the data on stdout, no progress bar there.
        let last = try await JobFlow.follow(client, accepted.id, quiet: output == nil || global.json)
        guard last.state == .succeeded else {
            throw Failure("job \(last.id) \(last.state.rawValue): \(last.error ?? "no reason given")")
        }
        try await client.output(ofJob: last.id) { chunk in try Self.write(chunk, to: fd) }
        return last.exported
    }

    /// Writes a chunk of the export to `fd`.
    static func write(_ chunk: [UInt8], to fd: Int32) throws {
        guard Out.write(fd, chunk) else {
            throw Failure("cannot write the export: \(String(cString: strerror(errno)))")
        }
    }
}
