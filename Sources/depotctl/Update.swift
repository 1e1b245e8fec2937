import ArgumentParser
import DepotClient
import Foundation

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
    @Option(name: .customLong("where"), help: "Update the records for which this predicate holds.") var predicateText:
        String
    @Option(
        help: ArgumentHelp(
            "A field and its new value, as field=value; repeat for more fields.", valueName: "field=value"))
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
        var request = JobRequest(kind: "update", store: store, entity: entity)
        request.settings.where = predicateText
        request.settings.set = values
        let accepted = try await client.submit(request)
        let last = try await JobFlow.follow(client, accepted.id, quiet: global.json)
        try JobFlow.finish(last, json: global.json) {
            "updated \(RecordPrinter.plural($0.updated, "record")) of \(store).\(entity) (\(Format.grouped($0.unchanged)) already so)"
        }
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
            guard
                let b = ["true": true, "false": false, "yes": true, "no": false, "1": true, "0": false][
                    text.lowercased()]
            else {
                throw Failure("\(field) is a bool; use true or false, not \"\(text)\"")
            }
            return .bool(b)
        default:
            return .string(text)
        }
    }
}
