import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Fetch: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch records: filtered, sorted, paged, sectioned; --watch follows changes.",
        discussion: """
            The predicate is NSPredicate-style: budget > 1000 AND destination IN {'Paris', 'Rome'}, \
            name BEGINSWITH[c] 'week', endDate == nil. Output is a table, or JSON, NDJSON \
            or CSV for piping. --watch prints the result again whenever a commit changes it, \
            until Ctrl-C; with --changes, it prints the result once, then only the records \
            that entered, changed or left it, each with its history token; --since TOKEN \
            resumes after a token printed before, without the first result. --json prints \
            the events as NDJSON (as does --format ndjson), one line each as it comes.

            Example:
              depotctl fetch travel Trip --where "budget > 1000" --sort -budget,name --limit 10
              depotctl fetch travel Trip --fields id,name --format csv > trips.csv
              depotctl fetch travel Trip --where "isFavorite == true" --section-by destination
              depotctl fetch travel Trip --where "destination == 'Rome'" --watch --changes --json
              depotctl fetch shop Order --where "ANY lines.qty > 5" --prefetch customer,lines
              depotctl fetch shop Order --fields id,customer.name,lines.sku --sort -lines.@count
              depotctl fetch travel Trip --fields id,budget --compute 'tax=budget * 0.2' --compute 'shout=uppercase:(name)'

            Key paths through relationships work in --where, --sort and --fields \
            (customer.name; ANY lines.qty > 5, lines.@count, lines.@sum.price, \
            SUBQUERY(lines, $l, $l.qty > 2).@count > 0). --prefetch embeds the related \
            records in each record: in a table a key path in --fields picks out their \
            values, and a relationship's column shows them as JSON.
            """)
    @OptionGroup var global: Global

    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to fetch.", valueName: "entity")) var entity: String

    @Option(
        name: .customLong("where"),
        help: "Only the records for which this predicate holds, such as \"budget > 1000 AND isFavorite == true\".")
    var predicateText: String?

    @Option(
        parsing: .unconditional,
        help: "The fields to sort by, comma-separated; a leading - sorts that field descending, as in -budget,name.")
    var sort: String?

    @Option(help: "At most this many records.") var limit: Int?
    @Option(help: "Skip this many records first (with --sort, for paging).") var offset: Int?
    @Option(help: "Only these fields, comma-separated, in this order; customer.name names a field of a related record.")
    var fields: String?

    @Option(
        help: ArgumentHelp(
            "A value computed for each record, as name=expression (budget * nights, uppercase:(name)); repeat for more.",
            valueName: "name=expression"))
    var compute: [String] = []

    @Option(
        help:
            "Embed the records of these relationships in each record, comma-separated (lines, or lines.product for nested)."
    )
    var prefetch: String?

    @Option(name: .customLong("section-by"), help: "Group the records by this field's value, one section per value.")
    var sectionBy: String?

    @Flag(help: "Keep running and print the result again whenever a commit changes it, until Ctrl-C.")
    var watch = false

    @Flag(help: "With --watch: print the records that entered, changed or left the result, not the whole result again.")
    var changes = false

    @Option(
        help: ArgumentHelp(
            "With --changes: resume after this token, printing what changed since, not the result.",
            valueName: "token"))
    var since: String?

    @Option(help: "How to print: table (the default), json, ndjson (one record per line) or csv.")
    var format: String?

    var predicate: String? { predicateText }

    /// An error in a computed field names it (`field "total": …`): its position is in that expression.
    func markedText(for message: String) -> String? {
        for item in compute {
            let name = String(item.prefix(while: { $0 != "=" }))
            if message.hasPrefix("field \"\(name.trimmed)\": ") { return String(item.dropFirst(name.count + 1)) }
        }
        return predicate
    }

    func validate() throws {
        for item in compute where !item.contains("=") {
            throw ValidationError("--compute takes name=expression, not \"\(item)\".")
        }
        if let format, !["table", "json", "ndjson", "csv"].contains(format) {
            throw ValidationError("--format must be table, json, ndjson or csv, not \"\(format)\".")
        }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more.") }
        if let offset, offset < 0 { throw ValidationError("--offset must be 0 or more.") }
        if changes, !watch { throw ValidationError("--changes follows a live fetch: give --watch with it.") }
        if since != nil, !changes {
            throw ValidationError("--since resumes a live fetch with changes: give --watch --changes with it.")
        }
        if changes, format == "csv" {
            throw ValidationError(
                "--changes prints events: use the table (the default), --json or --format ndjson, not csv.")
        }
        if changes, limit != nil || offset != nil || sectionBy != nil {
            throw ValidationError(
                "--changes cannot take --limit, --offset or --section-by: a change would move records across them.")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        let format = format ?? (global.json ? "json" : "table")
        let prefetched = commaList(prefetch) ?? []
        var request = FetchRequest(
            store: store, entity: entity, where: predicateText, sort: commaList(sort) ?? [], limit: limit,
            offset: offset, fields: commaList(fields), prefetch: prefetched)
        request.sectionBy = sectionBy
        request.computed = compute.map { item in
            let name = String(item.prefix { $0 != "=" })
            return ComputedFetchField(name: name.trimmed, expression: String(item.dropFirst(name.count + 1)))
        }
        var order = commaList(fields).map { $0 + request.computed.map(\.name) } ?? []
        // The embedded relationships get a column each, unless a key path of --fields shows them.
        func withPrefetched(_ columns: [String]) -> [String] {
            var out = columns
            for name in prefetched.map({ String($0.prefix { $0 != "." }) })
            where !out.contains(name) && !out.contains(where: { $0.hasPrefix(name + ".") }) {
                out.append(name)
            }
            return out
        }
        order = withPrefetched(order)
        if watch, changes {
            Interrupt.onInterrupt {}
            // Records carry their identifier, shown first in the tables.
            let schema = format == "table" ? try await entitySchema(client, store: store, entity: entity) : nil
            if let schema {
                order =
                    commaList(fields) == nil
                    ? withPrefetched(schema.columns) : schema.identifier.filter { !order.contains($0) } + order
            }
            try await client.liveLines(request, changes: true, since: since) { line in
                // JSON and NDJSON: the events as they come, one line each.
                if format != "table" { Out.line(line); return true }
                let event = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
                try Self.show(event, format: format, fields: order)
                return event["type"]?.string != "history_expired"
            }
            return
        }
        if watch {
            Interrupt.onInterrupt {}
            var first = true
            try await client.liveLines(request) { line in
                if format == "json" { Out.line(line); return true }
                let event = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
                if commaList(fields) == nil && order == withPrefetched([]) {
                    order = withPrefetched(try await entitySchema(client, store: store, entity: entity).columns)
                }
                if format == "table" {
                    if !first { Out.line() }
                    Out.line(
                        Terminal.dim(
                            "token \(event["token"]?.string ?? "-") at \(Format.date(ISO8601DateFormatter().string(from: Date())))"
                        ))
                }
                first = false
                RecordPrinter(format: format, fields: order).print(event["result"] ?? .null)
                return true
            }
            return
        }
        // The records as the daemon wrote them: --json passes them on as they are.
        let bytes = try await client.fetchJSON(request)
        if format == "json" { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        if commaList(fields) == nil {
            order = withPrefetched(try await entitySchema(client, store: store, entity: entity).columns)
        }
        RecordPrinter(format: format, fields: order).print(try JSONDecoder().decode(JSONValue.self, from: Data(bytes)))
    }

    /// One event of a live fetch with changes, for people.
    static func show(_ event: JSONValue, format: String, fields: [String]) throws {
        let printer = RecordPrinter(format: format, fields: fields)
        let token = event["token"]?.string ?? "-"
        switch event["type"]?.string {
        case "result":
            if format == "table" { Out.line(Terminal.dim("token \(token): the result")) }
            printer.print(.object(["records": event["records"] ?? .array([])]))
        case "changes":
            let inserted = event["inserted"]?.array ?? [], updated = event["updated"]?.array ?? []
            let deleted = event["deleted"]?.array ?? []
            if format == "table" {
                Out.line(
                    Terminal.dim(
                        "token \(token): \(inserted.count) entered, \(updated.count) changed, \(deleted.count) left"))
            }
            if !inserted.isEmpty { printer.print(.object(["records": .array(inserted)])) }
            if !updated.isEmpty { printer.print(.object(["records": .array(updated)])) }
            if !deleted.isEmpty {
                Out.line("left: " + deleted.map { $0.string ?? $0.text }.joined(separator: ", "))
            }
        case "history_expired":
            throw Failure(event["message"]?.string ?? "the history after the token was pruned")
        default:
            Out.line(event.text)
        }
    }
}
