import ArgumentParser
import DepotClient
import Foundation

struct Update: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set or compute fields of the records a predicate matches, as a job.",
        discussion: """
            Each --set names a field and its new value; the value is read as the field's \
            type (a number, true/false, a date such as 2025-06-01, or text); nil clears an \
            optional field. Each --compute names a field and an expression computed from \
            each record's values (NSExpression's syntax: + - * /, abs:, sqrt:, floor:, \
            ceiling:, trunc:, uppercase:, lowercase:, length:, modulus:by:, now(), \
            TERNARY(predicate, a, b), key paths such as customer.country or lines.@sum.qty). \
            A record whose computed value its field cannot hold is rejected and listed in \
            the job's rejects file; the others are saved.

            Example:
              depotctl update travel Trip --where "destination == 'Paris'" --set isFavorite=true --set notes=nil
              depotctl update travel Trip --where "destination == 'Paris'" --compute 'budget=budget * 1.1'
              depotctl update travel Trip --where TRUEPREDICATE --compute 'name=uppercase:(name)' --compute 'checked=now()'
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to change.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The entity whose records to update.", valueName: "entity")) var entity: String
    @Option(name: .customLong("where"), help: "Update the records for which this predicate holds.") var predicateText:
        String
    @Option(
        help: ArgumentHelp(
            "A field and its new value, as field=value; repeat for more fields.", valueName: "field=value"))
    var set: [String] = []
    @Option(
        help: ArgumentHelp(
            "A field and the expression computed for each record, as field=expression; repeat for more fields.",
            valueName: "field=expression"))
    var compute: [String] = []
    var predicate: String? { predicateText }

    /// An error in an expression names it (`compute "budget": …`): its position is in that text.
    func markedText(for message: String) -> String? {
        for item in compute {
            let name = String(item.prefix(while: { $0 != "=" }))
            if message.hasPrefix("compute \"\(name.trimmed)\": ") { return String(item.dropFirst(name.count + 1)) }
        }
        return predicate
    }

    func validate() throws {
        if set.isEmpty && compute.isEmpty {
            throw ValidationError("say what to change with --set field=value or --compute field=expression.")
        }
        for item in set where !item.contains("=") {
            throw ValidationError("--set takes field=value, not \"\(item)\".")
        }
        for item in compute where !item.contains("=") {
            throw ValidationError("--compute takes field=expression, not \"\(item)\".")
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
        var expressions: [String: String] = [:]
        for item in compute {
            let name = String(item.prefix(while: { $0 != "=" })).trimmed
            expressions[name] = String(item.dropFirst(item.prefix(while: { $0 != "=" }).count + 1))
        }
        var request = JobRequest(kind: "update", store: store, entity: entity)
        request.settings.where = predicateText
        if !values.isEmpty { request.settings.set = values }
        if !expressions.isEmpty { request.settings.compute = expressions }
        let accepted = try await client.submit(request)
        let last = try await JobFlow.follow(client, accepted.id, quiet: global.json)
        try JobFlow.finish(last, json: global.json) {
            var line =
                "updated \(RecordPrinter.plural($0.updated, "record")) of \(store).\(entity) (\(Format.grouped($0.unchanged)) already so)"
            if $0.rejected > 0 {
                line += "; \(Format.grouped($0.rejected)) rejected (depotctl job \($0.id) --rejects)"
            }
            return line
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
