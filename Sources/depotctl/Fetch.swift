import ArgumentParser
import Foundation
import NIOHTTP1

struct Fetch: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch records: filtered, sorted, paged, sectioned; --watch follows changes.",
        discussion: """
            The predicate is NSPredicate-style: budget > 1000 AND destination IN {'Paris', 'Rome'}, \
            name BEGINSWITH[c] 'week', endDate == nil. Output is a table, or JSON, NDJSON \
            or CSV for piping. --watch prints the result again whenever a commit changes it, \
            until Ctrl-C.

            Example:
              depotctl fetch travel Trip --where "budget > 1000" --sort -budget,name --limit 10
              depotctl fetch travel Trip --fields id,name --format csv > trips.csv
              depotctl fetch travel Trip --where "isFavorite == true" --section-by destination
            """)
    @OptionGroup var global: Global

    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to fetch.", valueName: "entity")) var entity: String

    @Option(name: .customLong("where"), help: "Only the records for which this predicate holds, such as \"budget > 1000 AND isFavorite == true\".")
    var predicateText: String?

    @Option(parsing: .unconditional,
            help: "The fields to sort by, comma-separated; a leading - sorts that field descending, as in -budget,name.")
    var sort: String?

    @Option(help: "At most this many records.") var limit: Int?
    @Option(help: "Skip this many records first (with --sort, for paging).") var offset: Int?
    @Option(help: "Only these fields, comma-separated, in this order.") var fields: String?

    @Option(name: .customLong("section-by"), help: "Group the records by this field's value, one section per value.")
    var sectionBy: String?

    @Flag(help: "Keep running and print the result again whenever a commit changes it, until Ctrl-C.")
    var watch = false

    @Option(help: "How to print: table (the default), json, ndjson (one record per line) or csv.")
    var format: String?

    var predicate: String? { predicateText }

    func validate() throws {
        if let format, !["table", "json", "ndjson", "csv"].contains(format) {
            throw ValidationError("--format must be table, json, ndjson or csv, not \"\(format)\".")
        }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more.") }
        if let offset, offset < 0 { throw ValidationError("--offset must be 0 or more.") }
    }

    func execute(_ client: DaemonClient) async throws {
        let format = format ?? (global.json ? "json" : "table")
        var body: [String: JSONValue] = [:]
        if let predicateText { body["where"] = .string(predicateText) }
        if let s = commaList(sort) { body["sort"] = .array(s.map(JSONValue.string)) }
        if let limit { body["limit"] = .int(Int64(limit)) }
        if let offset { body["offset"] = .int(Int64(offset)) }
        if let f = commaList(fields) { body["fields"] = .array(f.map(JSONValue.string)) }
        if let sectionBy { body["section_by"] = .string(sectionBy) }
        let path = dataPath(store, entity, "fetch")
        var order = commaList(fields) ?? []
        if watch {
            body["watch"] = .bool(true)
            Interrupt.onInterrupt {}
            var first = true
            try await client.lines(.POST, path, body: .bytes(Array(JSONValue.object(body).text.utf8), contentType: "application/json")) { line in
                if format == "json" { Out.line(line); return true }
                let event = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
                if order.isEmpty { order = try await entitySchema(client, store: store, entity: entity).columns }
                if format == "table" {
                    if !first { Out.line() }
                    Out.line(Terminal.dim("token \(event["token"]?.string ?? "-") at \(Format.date(ISO8601DateFormatter().string(from: Date())))"))
                }
                first = false
                RecordPrinter(format: format, fields: order).print(event["result"] ?? .null)
                return true
            }
            return
        }
        let bytes = try await post(client, path, body)
        if format == "json" { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        if order.isEmpty { order = try await entitySchema(client, store: store, entity: entity).columns }
        RecordPrinter(format: format, fields: order).print(try JSONDecoder().decode(JSONValue.self, from: Data(bytes)))
    }
}
