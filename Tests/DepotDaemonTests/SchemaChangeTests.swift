import DepotClient
import Foundation
import Testing

/// Schema changes through depotd (DESIGN §18): renames in the configuration.
@Suite("depotd: schema changes")
struct SchemaChangeTests {
    @Test(
        "renamed_from in depot.toml renames an entity and a field once, on the next start; records and history read under the new names"
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
        // A reload renames in the open store too.
        try Data(
            text.replacingOccurrences(
                of: #"remarks = { type = "string?", renamed_from = "notes" }"#,
                with: #"comments = { type = "string?", renamed_from = "remarks" }"#
            ).utf8
        ).write(to: toml)
        // A dry run does not look past a rename the reload applies: nothing to convert.
        let dryRun = try await DepotClient(socketPath: d.socket).migrate(store: "travel", dryRun: true)
        #expect(dryRun.entities.isEmpty, "\(dryRun)")
        kill(d.process.processIdentifier, SIGHUP)
        #expect(d.notify.waitFor(prefix: "READY=1", count: 2, timeout: 30) != nil)
        let reloaded = DepotClient(socketPath: d.socket)
        #expect(
            try await reloaded.count(FetchRequest(store: "travel", entity: "Voyage", where: "comments == 'note 7'"))
                == 1)
        let fields = try await reloaded.store("travel").entities[0].fields.map(\.name)
        #expect(fields.contains("comments") && !fields.contains("remarks"), "\(fields)")
        _ = d.stop()
    }

    /// The configuration's Trip with `budget` replaced by `declaration`, and `extra` fields.
    static func tripConfig(budget: String, extra: String = "") -> String {
        DaemonProcess.config().replacingOccurrences(of: #"budget = "double""#, with: "budget = \(budget)\n\(extra)")
    }

    @Test(
        "convert in depot.toml: depotctl migrate --dry-run lists the records it would reject, changing nothing; migrate converts them in a job, rejecting exactly those; a start with a new change migrates by itself"
    )
    func migrate() async throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder)
        var csv = "id,name,startDate,budget,isFavorite,notes\n"
        for i in 0..<300 { csv += "r\(i),Trip \(i),2025-03-\(10 + i % 18),\(i).5,true,note \(i)\n" }
        csv += "huge,Huge,2025-03-10,1e300,false,\n"
        _ = try ChangeFeedTests.importTrips(d, csv, name: "trips.csv")
        let toml = folder.appendingPathComponent("depot.toml")
        try Data(Self.tripConfig(budget: #"{ type = "int", convert = "trunc:(budget * 100)" }"#).utf8).write(to: toml)
        let client = DepotClient(socketPath: d.socket)
        let plan = try await client.migrate(store: "travel", dryRun: true)
        #expect(plan.dryRun && plan.entities.count == 1, "\(plan)")
        let trip = try #require(plan.entities.first)
        #expect(trip.entity == "Trip" && trip.records == 301 && trip.rejected == 1 && !trip.fails, "\(trip)")
        #expect(
            trip.changes == [
                MigrationAnswer.Change(field: "budget", from: "double", to: "int", convert: "trunc:(budget * 100)")
            ])
        #expect(trip.rejects.map(\.identifier) == ["huge"] && trip.rejects[0].field == "budget", "\(trip.rejects)")
        // Nothing changed: the store still holds doubles.
        let before = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", where: "id == 'r3'"))
        #expect(before.first?["budget"] == JSONValue.double(3.5))
        // depotctl migrate: the daemon reads the file, and the job converts.
        let answer = try await client.migrate(store: "travel", dryRun: false)
        #expect(answer.jobs.count == 1 && answer.jobs[0].kind == "migrate", "\(answer)")
        let ended = try d.jobEnded(answer.jobs[0].id)
        #expect(ended["state"] as? String == "succeeded", "\(ended)")
        #expect(ended["rejected"] as? Int == 1 && ended["deleted"] as? Int == 1, "\(ended)")
        #expect(ended["read"] as? Int == 301 && ended["updated"] as? Int == 300, "\(ended)")
        let after = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", where: "budget == 350"))
        #expect(after.map { $0["id"] } == [JSONValue.string("r3")], "\(after)")
        #expect(try await client.count(FetchRequest(store: "travel", entity: "Trip")) == 300)
        let info = try await client.store("travel")
        #expect(info.entities[0].fields.first { $0.name == "budget" }?.type == "int", "\(info.entities[0].fields)")
        let rejects = try String(contentsOfFile: try #require(ended["rejects"] as? String), encoding: .utf8)
        #expect(
            rejects.contains(#""identifier":"huge","field":"budget""#)
                && rejects.contains(#""record":{"budget":1e+300,"#) && rejects.contains(#""name":"Huge""#), "\(rejects)"
        )
        #expect(try await client.migrate(store: "travel", dryRun: true).entities.isEmpty)
        _ = d.stop()
        // A start with a new required field migrates by itself, as depotd.
        try Data(
            Self.tripConfig(budget: #""int""#, extra: #"code = { type = "string", convert = "uppercase:(name)" }"#).utf8
        ).write(to: toml)
        d = try DaemonProcess(folder: folder)
        let restarted = DepotClient(socketPath: d.socket)
        let started = try await restarted.jobs().filter { $0.kind == "migrate" && $0.id != answer.jobs[0].id }
        #expect(started.count == 1, "\(started)")
        if let job = started.first {
            #expect(try d.jobEnded(job.id)["state"] as? String == "succeeded")
        }
        #expect(
            try await restarted.count(FetchRequest(store: "travel", entity: "Trip", where: "code == 'TRIP 7'")) == 1)
        // A reload with a further change migrates the open store, and one
        // no conversion explains is refused whole, the store kept as it is.
        let code = #"code = { type = "string", convert = "uppercase:(name)" }"#
        try Data(
            Self.tripConfig(
                budget: #""int""#, extra: code + "\n" + #"letters = { type = "int", convert = "length:(name)" }"#
            ).utf8
        ).write(to: toml)
        kill(d.process.processIdentifier, SIGHUP)
        #expect(d.notify.waitFor(prefix: "READY=1", count: 2, timeout: 30) != nil)
        let reloaded = try await restarted.jobs().filter { $0.kind == "migrate" && $0.id != answer.jobs[0].id }
        #expect(reloaded.count == 2, "\(reloaded)")
        for job in reloaded { #expect(try d.jobEnded(job.id)["state"] as? String == "succeeded") }
        #expect(
            try await restarted.count(FetchRequest(store: "travel", entity: "Trip", where: "letters == 6")) == 10)
        try Data(Self.tripConfig(budget: #""string""#, extra: code).utf8).write(to: toml)
        kill(d.process.processIdentifier, SIGHUP)
        #expect(d.notify.waitFor(prefix: "READY=1", count: 3, timeout: 30) != nil)
        #expect(d.log.contains("configuration not reloaded") && d.log.contains("the type changed from int to string"))
        #expect(try await restarted.store("travel").entities[0].fields.contains { $0.name == "letters" })
        _ = d.stop()
    }
}
