import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

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
            try await client.rejectLines(ofJob: id) { line in
                count += 1
                if global.json { Out.line(line); return true }
                let r = (try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))) ?? .null
                table.add([
                    r["line"]?.int.map(String.init) ?? "", r["field"]?.string ?? "", r["reason"]?.string ?? "",
                    r["value"]?.string ?? ""
                ])
                return true
            }
            if !global.json { Out.line(count == 0 ? "job \(id) rejected no records" : table.render()) }
            return
        }
        let j = try await client.job(id)
        if global.json { try Out.json(j); return }
        var rows: [(String, String)] = [
            ("id", j.id), ("kind", j.kind), ("store", j.store + (j.entity.map { ".\($0)" } ?? "")),
            ("state", Terminal.state(j.state)), ("author", j.author), ("created", Format.date(j.created))
        ]
        if let s = j.started { rows.append(("started", Format.date(s))) }
        if let f = j.finished { rows.append(("finished", Format.date(f))) }
        if let p = j.path { rows.append(("file", p)) }
        rows.append(("did", j.summary))
        if j.kind == "import", j.bytesTotal > 0 {
            rows.append(
                (
                    "read",
                    "\(Format.grouped(Int(j.bytesRead))) of \(Format.grouped(Int(j.bytesTotal))) bytes, \(RecordPrinter.plural(j.saves, "save"))"
                ))
        }
        if j.rate > 0 { rows.append(("rate", "\(Format.grouped(Int(min(j.rate, 1e15)))) rows/s")) }
        if let e = j.error { rows.append(("error", e)) }
        if let r = j.rejects { rows.append(("rejects", "\(r) (depotctl job \(j.id) --rejects)")) }
        let width = rows.map(\.0.count).max() ?? 0
        for (k, v) in rows {
            Out.line(Terminal.bold(k.padding(toLength: width, withPad: " ", startingAt: 0)) + "  " + v)
        }
    }
}
