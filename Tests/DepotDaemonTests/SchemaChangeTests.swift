import DepotClient
import Foundation
import Testing

/// Schema changes through depotd (DESIGN §18): renames in the configuration.
@Suite("depotd: schema changes")
struct SchemaChangeTests {
    @Test(
        "renamed_from in depot.toml renames an entity and a field once, on the next start; records and history read under the new names; convert is refused as not built"
    )
    func renames() async throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder)
        var csv = "id,name,startDate,budget,isFavorite,notes\n"
        for i in 0..<50 { csv += "r\(i),Trip \(i),2025-03-\(10 + i % 18),\(i).5,true,note \(i)\n" }
        _ = try ChangeFeedTests.importTrips(d, csv, name: "trips.csv")
        _ = d.stop()
        let toml = folder.appendingPathComponent("depot.toml")
        var text = try String(contentsOf: toml, encoding: .utf8)
        text = text.replacingOccurrences(of: #"name = "Trip""#, with: "name = \"Voyage\"\n  renamed_from = \"Trip\"")
        text = text.replacingOccurrences(
            of: #"notes = "string?""#, with: #"remarks = { type = "string?", renamed_from = "notes" }"#)
        try Data(text.utf8).write(to: toml)
        d = try DaemonProcess(folder: folder)
        let client = DepotClient(socketPath: d.socket)
        let store = try await client.store("travel")
        #expect(store.entities.map(\.name) == ["Voyage"] && store.entities[0].count == 50)
        #expect(store.entities[0].fields.map(\.name).contains("remarks"))
        #expect(
            try await client.count(FetchRequest(store: "travel", entity: "Voyage", where: "remarks == 'note 7'")) == 1)
        let history = try await client.history(store: "travel", limit: 10).flatMap(\.changes)
        #expect(!history.isEmpty && history.allSatisfy { $0.entity == "Voyage" })
        // The next start finds nothing left to rename.
        _ = d.stop()
        d = try DaemonProcess(folder: folder)
        #expect(try await DepotClient(socketPath: d.socket).store("travel").entities[0].count == 50)
        _ = d.stop()
        // convert (a migrate job) is named as not built, with its key.
        let convert = folder.appendingPathComponent("convert.toml")
        try Data(
            text.replacingOccurrences(
                of: #"budget = "double""#, with: #"budget = { type = "int", convert = "trunc:(budget)" }"#
            )
            .utf8
        ).write(to: convert)
        let (status, message) = try DaemonProcess.checkConfig(convert.path)
        #expect(
            status == 78 && message.contains("fields.budget.convert") && message.contains("not built yet"), "\(message)"
        )
    }
}
