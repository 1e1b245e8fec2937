import ArgumentParser
import DepotClient
import Foundation

/// `depotctl get`, `set` and `rm`: one record (DESIGN §16), read with the
/// token of its last change and written back with optimistic concurrency.
enum RecordID {
    static let help = ArgumentHelp(
        "The record's identifier: its value, or the JSON array of a compound one's, such as '[\"AF1\",12]'.",
        valueName: "id")

    /// The identifier as the path takes it: its text.
    static func value(_ text: String) -> JSONValue { .string(text) }

    /// What a save changed, in one line.
    static func summary(_ answer: SaveAnswer, token: String?) -> String {
        let effects = answer.changes.map(\.effect).joined(separator: ", ")
        return effects
            + (answer.token.map { " at token \($0)" } ?? (token.map { " (nothing changed; token \($0))" } ?? ""))
    }
}

struct Get: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one record and the token of its last change.",
        discussion: """
            Prints each field and its value, then the record's token (its ETag: give \
            it to set or rm --if-token to write back only if nobody changed the record \
            since). With --json, {"token": "42", "record": {...}}. A missing record is \
            an error (exit 1).

            Example:
              depotctl get travel Trip T1
              depotctl --json get travel Seat '["AF1",12]'
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to read.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The record's entity.", valueName: "entity")) var entity: String
    @Argument(help: RecordID.help) var id: String

    struct Answer: Encodable {
        var token: String
        var record: [String: JSONValue]
    }

    func execute(_ client: DaemonClient) async throws {
        guard let found = try await client.record(store: store, entity: entity, id: RecordID.value(id)) else {
            throw Failure("there is no \(entity) \(id) in \(store)")
        }
        if global.json {
            try Out.json(Answer(token: found.token, record: found.value.fields))
            return
        }
        let names = found.value.fields.keys.sorted()
        let width = names.map(\.count).max() ?? 0
        for name in names {
            Out.line(
                name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + found.value.fields[name]!.display)
        }
        Out.line(Terminal.dim("token \(found.token)"))
    }
}

struct SetFields: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set fields of one record (a save of one change).",
        discussion: """
            Each FIELD=VALUE sets a field: a text or date field takes VALUE as it is; \
            any other field reads it as JSON (950.5, true, null). FIELD:=JSON gives the \
            JSON itself (name:='"null"' for the text null). With --if-token, the record \
            is written only if no other save changed these fields since that token \
            (the one get printed); else it is a conflict, each field listed with its \
            value then, now and yours (exit 1), unless --merge says otherwise. Prints \
            what the save did and its token; with --json, the daemon's answer.

            Example:
              depotctl set travel Trip T1 budget=950 notes="window seat"
              depotctl set travel Trip T1 budget=990 --if-token 41
              depotctl set travel Trip T1 budget=990 --if-token 41 --merge object-trump
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to write.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The record's entity.", valueName: "entity")) var entity: String
    @Argument(help: RecordID.help) var id: String
    @Argument(help: ArgumentHelp("The fields to set: FIELD=VALUE or FIELD:=JSON.", valueName: "field=value"))
    var assignments: [String]
    @Option(name: .customLong("if-token"), help: "Write only if nobody changed these fields since this token.")
    var ifToken: String?
    @Option(help: "When someone did: error (default), object-trump, store-trump or overwrite.")
    var merge: String?

    func validate() throws {
        if assignments.isEmpty { throw ValidationError("give at least one FIELD=VALUE to set") }
    }

    func execute(_ client: DaemonClient) async throws {
        let info = try await client.store(store)
        guard let schema = info.entities.first(where: { $0.name == entity }) else {
            throw Failure(
                "store \(store) has no entity \(entity); its entities: "
                    + info.entities.map(\.name).joined(separator: ", "))
        }
        var fields: [String: JSONValue] = [:]
        for assignment in assignments {
            let raw = assignment.range(of: ":=")
            guard let split = raw ?? assignment.range(of: "="), split.lowerBound > assignment.startIndex else {
                throw Failure("\(assignment) is not FIELD=VALUE or FIELD:=JSON")
            }
            let name = String(assignment[..<split.lowerBound])
            let text = String(assignment[split.upperBound...])
            guard let field = schema.fields.first(where: { $0.name == name }) else {
                throw Failure(
                    "\(entity) has no field \(name); its fields: "
                        + schema.fields.map(\.name).joined(separator: ", "))
            }
            let type = field.type.hasSuffix("?") ? String(field.type.dropLast()) : field.type
            if raw == nil, type == "string" || type == "date" {
                fields[name] = .string(text)
                continue
            }
            guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
                throw Failure("\(name) is a \(type) field, and \(text) is not a JSON value of one")
            }
            fields[name] = value
        }
        let (answer, token) = try await client.patch(
            store: store, entity: entity, id: RecordID.value(id), fields, ifToken: ifToken, merge: merge)
        if global.json {
            try Out.json(answer)
            return
        }
        Out.line("\(entity) \(id): " + RecordID.summary(answer, token: token))
    }
}

struct Remove: DepotCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete one record, its delete rules applied (a save of one change).",
        discussion: """
            With --if-token, the record is deleted only if no other save changed it \
            since that token; else it is a conflict (exit 1). Prints what the save did \
            and its token; with --json, the daemon's answer.

            Example:
              depotctl rm travel Trip T2
              depotctl rm travel Seat '["AF1",12]' --if-token 41
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to write.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The record's entity.", valueName: "entity")) var entity: String
    @Argument(help: RecordID.help) var id: String
    @Option(name: .customLong("if-token"), help: "Delete only if nobody changed the record since this token.")
    var ifToken: String?
    @Option(help: "When someone did: error (default), object-trump, store-trump or overwrite.")
    var merge: String?

    func execute(_ client: DaemonClient) async throws {
        let answer = try await client.delete(
            store: store, entity: entity, id: RecordID.value(id), ifToken: ifToken, merge: merge)
        if global.json {
            try Out.json(answer)
            return
        }
        Out.line("\(entity) \(id): " + RecordID.summary(answer, token: nil))
    }
}
