import ArgumentParser
import Foundation
import NIOHTTP1

/// The entity's description (fields in their order), from `GET /v1/stores/S`.
func entitySchema(_ client: DaemonClient, store: String, entity: String) async throws -> StoreList.Store.Entity {
    let s = try await client.json(StoreList.Store.self, .GET, "/v1/stores/\(store.encoded)")
    if let e = s.entities.first(where: { $0.name == entity }) { return e }
    // The daemon names the closest entity in its error.
    _ = try await client.call(.POST, "/v1/stores/\(store.encoded)/entities/\(entity.encoded)/fetch",
                              body: .bytes(Array(#"{"result":"count"}"#.utf8), contentType: "application/json"))
    throw Failure("store \(store) has no entity \(entity)")
}

extension StoreList.Store.Entity {
    /// The columns of a table of records: the identifier first, then the other fields.
    var columns: [String] { identifier + fields.map(\.name).filter { !identifier.contains($0) } }
}

func dataPath(_ store: String, _ entity: String, _ action: String) -> String {
    "/v1/stores/\(store.encoded)/entities/\(entity.encoded)/\(action)"
}

func post(_ client: DaemonClient, _ path: String, _ body: [String: JSONValue]) async throws -> [UInt8] {
    try await client.call(.POST, path, body: .bytes(Array(JSONValue.object(body).text.utf8), contentType: "application/json"))
}

/// Renders `{"records": [...]}` or `{"sections": [...]}` in a format.
struct RecordPrinter {
    var format: String
    var fields: [String]

    func print(_ result: JSONValue) {
        if let sections = result["sections"]?.array {
            for (i, section) in sections.enumerated() {
                if format == "table" {
                    if i > 0 { Out.line() }
                    Out.line(Terminal.bold("\(section["key"].map(\.display).map { $0.isEmpty ? "(none)" : $0 } ?? "")") + Terminal.dim("  " + Self.plural(section["records"]?.array?.count ?? 0, "record")))
                }
                printRecords(section["records"]?.array ?? [], header: i == 0 || format == "table")
            }
        } else {
            printRecords(result["records"]?.array ?? [], header: true)
        }
    }

    static func plural(_ n: Int, _ noun: String) -> String { "\(Format.grouped(n)) \(noun)" + (n == 1 ? "" : "s") }

    func printRecords(_ records: [JSONValue], header: Bool) {
        switch format {
        case "ndjson":
            for r in records { Out.line(r.text(order: fields)) }
        case "csv":
            if header { Out.line(fields.map(Format.csvField).joined(separator: ",")) }
            for r in records {
                Out.line(fields.map { f in
                    guard let v = r[f] else { return "" }
                    if case .string(let s) = v { return Format.csvField(s) }
                    return v == .null ? "" : Format.csvField(v.text)
                }.joined(separator: ","))
            }
        default:
            var table = Table(fields)
            for r in records { table.add(fields.map { r[$0]?.display ?? "" }) }
            for (i, f) in fields.enumerated() where records.contains(where: {
                if case .int = $0[f] ?? .null { return true }
                if case .double = $0[f] ?? .null { return true }
                return false
            }) { table.rightAligned.insert(i) }
            Out.line(records.isEmpty ? Terminal.dim("no records") : table.render())
        }
    }
}

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

struct Count: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Count the records, all or those a predicate matches.",
        discussion: """
            Prints the number; with --json, {"count": N}.

            Example:
              depotctl count travel Trip --where "destination == 'Paris'"
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to count.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Only count the records for which this predicate holds, such as \"budget > 1000\".")
    var predicateText: String?
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        var body: [String: JSONValue] = ["result": .string("count")]
        if let predicateText { body["where"] = .string(predicateText) }
        let bytes = try await post(client, dataPath(store, entity, "fetch"), body)
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        Out.line(Format.grouped(try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["count"]?.int ?? 0))
    }
}

struct IDs: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "ids",
        abstract: "Print the identifiers of the records, one per line.",
        discussion: """
            For scripts: the identifiers a predicate matches, sorted and limited as asked.

            Example:
              depotctl ids travel Trip --where "budget < 100" --sort id --limit 50
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose identifiers to print.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Only the records for which this predicate holds.") var predicateText: String?
    @Option(parsing: .unconditional, help: "The fields to sort by, comma-separated; a leading - sorts descending, as in -budget,id.")
    var sort: String?
    @Option(help: "At most this many identifiers.") var limit: Int?
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        var body: [String: JSONValue] = ["result": .string("identifiers")]
        if let predicateText { body["where"] = .string(predicateText) }
        if let s = commaList(sort) { body["sort"] = .array(s.map(JSONValue.string)) }
        if let limit { body["limit"] = .int(Int64(limit)) }
        let bytes = try await post(client, dataPath(store, entity, "fetch"), body)
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        for id in try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["identifiers"]?.array ?? [] {
            Out.line(id.string ?? id.text)
        }
    }
}

struct Stats: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Count, sum, average, minimum and maximum of a field, optionally per group.",
        discussion: """
            Computed inside SQLite, over all records or those a predicate matches.

            Example:
              depotctl stats travel Trip --field budget --group-by destination
              depotctl stats travel Trip --field budget --where "isFavorite == true" --json
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity to compute over.", valueName: "entity")) var entity: String
    @Option(help: "The field to compute the statistics of.") var field: String
    @Option(name: .customLong("group-by"), help: "Fields to group by, comma-separated: one row per combination of their values.")
    var groupBy: String?
    @Option(name: .customLong("where"), help: "Only the records for which this predicate holds.") var predicateText: String?
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        var body: [String: JSONValue] = ["field": .string(field),
                                         "functions": .array(["count", "sum", "avg", "min", "max"].map(JSONValue.string))]
        let groups = commaList(groupBy) ?? []
        if !groups.isEmpty { body["group_by"] = .array(groups.map(JSONValue.string)) }
        if let predicateText { body["where"] = .string(predicateText) }
        let bytes = try await post(client, dataPath(store, entity, "aggregate"), body)
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let rows = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["rows"]?.array ?? []
        let functions = ["count", "sum", "avg", "min", "max"]
        var table = Table(groups + functions, rightAligned: Set(groups.count..<(groups.count + functions.count)))
        for r in rows { table.add(groups.map { r["group"]?[$0]?.display ?? "" } + functions.map { r[$0]?.display ?? "" }) }
        Out.line(table.render())
    }
}

struct Duplicates: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find records that share the values of some fields; --resolve keeps one of each group.",
        discussion: """
            Lists each group of records with equal values of the --by fields. With \
            --resolve, a dedupe job keeps the first (oldest) or last record of each group \
            and deletes the others, logged in history like any delete.

            Example:
              depotctl duplicates travel Trip --by name,startDate
              depotctl duplicates travel Trip --by name --resolve keep-first
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity to look in.", valueName: "entity")) var entity: String
    @Option(help: "The fields whose equal values make records duplicates, comma-separated.") var by: String
    @Option(help: "Keep one record of each group and delete the others: keep-first (the oldest) or keep-last.")
    var resolve: String?

    func validate() throws {
        if let resolve, !["keep-first", "keep-last"].contains(resolve) {
            throw ValidationError("--resolve must be keep-first or keep-last, not \"\(resolve)\".")
        }
        if (commaList(by) ?? []).isEmpty { throw ValidationError("--by needs at least one field.") }
    }

    func execute(_ client: DaemonClient) async throws {
        let fields = commaList(by) ?? []
        if let resolve {
            let accepted = try await JobFlow.submit(client, ["kind": .string("dedupe"), "store": .string(store), "entity": .string(entity),
                                                           "by": .array(fields.map(JSONValue.string)), "keep": .string(resolve)])
            let (last, text) = try await JobFlow.follow(client, try Job.decode(accepted).id, quiet: global.json)
            try JobFlow.finish(last, text: text, json: global.json) { "deleted \(RecordPrinter.plural($0.deleted, "duplicate")), kept the \(resolve == "keep-first" ? "first" : "last") of each group" }
            return
        }
        let bytes = try await post(client, dataPath(store, entity, "duplicates"), ["by": .array(fields.map(JSONValue.string))])
        if global.json { Out.line(String(decoding: bytes, as: UTF8.self).trimmed); return }
        let groups = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))["groups"]?.array ?? []
        var table = Table(fields + ["COUNT", "IDENTIFIERS"], rightAligned: [fields.count])
        for g in groups {
            let values = g["values"]?.array ?? []
            let ids = g["identifiers"]?.array ?? []
            table.add(values.map(\.display) + [Format.grouped(ids.count), ids.map { $0.string ?? $0.text }.joined(separator: ", ")])
        }
        Out.line(groups.isEmpty ? "no duplicates by \(fields.joined(separator: ", "))" : table.render())
    }
}

struct Delete: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete the records a predicate matches, as a job.",
        discussion: """
            Deletes in batches, each logged in history (with the fields the entity \
            preserves on delete). The predicate is required: TRUEPREDICATE deletes all.

            Example:
              depotctl delete travel Trip --where "endDate < '2020-01-01'"
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to change.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to delete.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Delete the records for which this predicate holds.") var predicateText: String
    var predicate: String? { predicateText }

    func execute(_ client: DaemonClient) async throws {
        let accepted = try await JobFlow.submit(client, ["kind": .string("delete"), "store": .string(store), "entity": .string(entity),
                                                       "where": .string(predicateText)])
        let (last, text) = try await JobFlow.follow(client, try Job.decode(accepted).id, quiet: global.json)
        try JobFlow.finish(last, text: text, json: global.json) { "deleted \(RecordPrinter.plural($0.deleted, "record")) from \(store).\(entity)" }
    }
}

struct Update: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set fields of the records a predicate matches, as a job.",
        discussion: """
            Each --set names a field and its new value; the value is read as the field's \
            type (a number, true/false, a date such as 2025-06-01, or text); nil clears an \
            optional field.

            Example:
              depotctl update travel Trip --where "destination == 'Paris'" --set isFavorite=true --set notes=nil
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to change.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to update.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Update the records for which this predicate holds.") var predicateText: String
    @Option(help: ArgumentHelp("A field and its new value, as field=value; repeat for more fields.", valueName: "field=value"))
    var set: [String]
    var predicate: String? { predicateText }

    func validate() throws {
        if set.isEmpty { throw ValidationError("say what to change with --set field=value.") }
        for item in set where !item.contains("=") {
            throw ValidationError("--set takes field=value, not \"\(item)\".")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        let schema = try await entitySchema(client, store: store, entity: entity)
        var values: [String: JSONValue] = [:]
        for item in set {
            let name = String(item.prefix(while: { $0 != "=" }))
            let text = String(item.dropFirst(name.count + 1))
            guard let field = schema.fields.first(where: { $0.name == name }) else {
                // The daemon names the closest field.
                values[name] = .string(text)
                continue
            }
            values[name] = try Self.value(text, type: field.type, field: name)
        }
        let accepted = try await JobFlow.submit(client, ["kind": .string("update"), "store": .string(store), "entity": .string(entity),
                                                       "where": .string(predicateText), "set": .object(values)])
        let (last, text) = try await JobFlow.follow(client, try Job.decode(accepted).id, quiet: global.json)
        try JobFlow.finish(last, text: text, json: global.json) { "updated \(RecordPrinter.plural($0.updated, "record")) of \(store).\(entity) (\(Format.grouped($0.unchanged)) already so)" }
    }

    /// A command-line value as the field's type.
    static func value(_ text: String, type: String, field: String) throws -> JSONValue {
        let optional = type.hasSuffix("?")
        if text == "nil" || text == "null" {
            guard optional else { throw Failure("\(field) is not optional; give it a value instead of \(text)") }
            return .null
        }
        switch type.trimmingCharacters(in: CharacterSet(charactersIn: "?")) {
        case "int":
            guard let i = Int64(text) else { throw Failure("\(field) is an int; \"\(text)\" is not one") }
            return .int(i)
        case "double":
            guard let d = Double(text) else { throw Failure("\(field) is a double; \"\(text)\" is not a number") }
            return .double(d)
        case "bool":
            guard let b = ["true": true, "false": false, "yes": true, "no": false, "1": true, "0": false][text.lowercased()] else {
                throw Failure("\(field) is a bool; use true or false, not \"\(text)\"")
            }
            return .bool(b)
        default:
            return .string(text)
        }
    }
}

struct Export: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export records as CSV or NDJSON, to a file or stdout.",
        discussion: """
            Runs an export job in the daemon (a consistent snapshot), then copies what it \
            wrote to the file named by -o, or to stdout.

            Example:
              depotctl export travel Trip --where "isFavorite == true" --format csv -o favourites.csv
              depotctl export travel Trip | gzip > trips.ndjson.gz
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to export.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Only the records for which this predicate holds.") var predicateText: String?
    @Option(help: "csv, or ndjson (one JSON object per line, the default).") var format = "ndjson"
    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of stdout.", valueName: "file")) var output: String?
    var predicate: String? { predicateText }

    func validate() throws {
        if !["csv", "ndjson"].contains(format) { throw ValidationError("--format must be csv or ndjson, not \"\(format)\".") }
    }

    func execute(_ client: DaemonClient) async throws {
        var body: [String: JSONValue] = ["kind": .string("export"), "store": .string(store), "entity": .string(entity),
                                         "format": .string(format)]
        if let predicateText { body["where"] = .string(predicateText) }
        let accepted = try await JobFlow.submit(client, body)
        // With the data on stdout, no progress bar there.
        let (last, _) = try await JobFlow.follow(client, try Job.decode(accepted).id, quiet: output == nil || global.json)
        guard last.state == "succeeded" else {
            throw Failure("job \(last.id) \(last.state): \(last.error ?? "no reason given")")
        }
        var fd: Int32 = 1
        var temporary: String?
        if let output {
            temporary = output + ".depotctl-\(getpid()).part"
            fd = open(temporary!, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw Failure("cannot write \(output): \(String(cString: strerror(errno)))") }
        }
        do {
            try await client.exchange(.GET, "/v1/jobs/\(last.id)/output") { chunk in
                guard Out.write(fd, chunk) else { throw Failure("cannot write the export: \(String(cString: strerror(errno)))") }
                return true
            }
        } catch {
            if let temporary { close(fd); unlink(temporary) }
            throw error
        }
        if let output, let temporary {
            guard fsync(fd) == 0, close(fd) == 0, rename(temporary, output) == 0 else {
                unlink(temporary)
                throw Failure("cannot write \(output): \(String(cString: strerror(errno)))")
            }
            if global.json { Out.line(JSONValue.object(["job": .string(last.id), "exported": .int(Int64(last.exported)), "file": .string(output)]).text) }
            else { Out.line("exported \(RecordPrinter.plural(last.exported, "record")) of \(store).\(entity) to \(output)") }
        }
    }
}
