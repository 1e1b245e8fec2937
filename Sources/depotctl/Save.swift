import ArgumentParser
import DepotClient
import Foundation

struct Save: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply a change set to a store, all of it or nothing (DESIGN §16).",
        discussion: """
            Reads the save's body, a JSON object whose "changes" each name their kind \
            and entity ({"insert": "Trip", "record": {...}}, {"update": "Trip", \
            "identifier": "T1", "set": {...}}, "upsert", "replace", {"delete": "Trip", \
            "identifier": "T2"}), from FILE or, with - or nothing, from standard input. \
            The changes are applied in one transaction and logged as one history \
            transaction; if any fails, nothing is written and each failing change is \
            named, with exit status 1.

            Example:
              depotctl save travel changes.json
              depotctl --json save travel - < changes.json
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to save to.", valueName: "store")) var store: String
    @Argument(help: ArgumentHelp("The change set's file; - or nothing reads standard input.", valueName: "file"))
    var file: String?

    func execute(_ client: DaemonClient) async throws {
        let data: Data
        if let file, file != "-" {
            guard let read = FileManager.default.contents(atPath: file) else {
                throw Failure("cannot read \(file); check the path")
            }
            data = read
        } else {
            data = FileHandle.standardInput.readDataToEndOfFile()
        }
        let body: SaveBody
        do {
            body = try JSONDecoder().decode(SaveBody.self, from: data)
        } catch {
            throw Failure(
                "the change set is not a save's body: \(error); "
                    + #"it is {"changes": [{"insert": "Trip", "record": {...}}, ...]}"#)
        }
        let answer = try await client.save(store: store, body)
        if global.json {
            try Out.json(answer)
            return
        }
        var effects: [String: Int] = [:]
        for change in answer.changes { effects[change.effect, default: 0] += 1 }
        let summary = ["inserted", "updated", "unchanged", "deleted"].compactMap { effect in
            effects[effect].map { "\(Format.grouped($0)) \(effect)" }
        }
        Out.line(
            "saved \(RecordPrinter.plural(answer.changes.count, "change")) to \(store)"
                + (answer.token.map { " at token \($0)" } ?? " (nothing changed)") + ": "
                + summary.joined(separator: ", "))
    }
}
