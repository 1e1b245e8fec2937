import DepotClient
import Foundation
import Testing

/// `depotctl infer` and `POST /v1/infer` through depotd (DESIGN §18).
@Suite("depotd: infer")
struct InferDaemonTests {
    @Test(
        "depotctl infer prints a [[store.entity]] that a configuration accepts; --json the document; bad files refused with the reason, the daemon serving on"
    )
    func infer() async throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let file = d.folder.appendingPathComponent("bookings.csv")
        var text = "Booking ID;guest;nights;price;arrival\n"
        for k in 1...1_200 {
            text +=
                "B\(k);\"Guest; \(k)\";\(k % 9 + 1);\(k % 2 == 0 ? "NA" : "\(k * 10)");2026-03-\(k % 28 + 1 < 10 ? "0" : "")\(k % 28 + 1)\n"
        }
        text += "B1201;late;2;99.5;2026-04-01\n"
        try Data(text.utf8).write(to: file)
        let printed = try Ctl.run(["infer", file.path], socket: d.socket)
        #expect(printed.status == 0, "\(printed.err)")
        #expect(printed.out.contains(#"name = "Bookings""#) && printed.out.contains(#"identifier = "Booking_ID""#))
        #expect(
            printed.out.contains(#"price      = "double?"  # int until line 1,202 ("99.5"); null: "NA" × 600"#),
            "\(printed.out)")
        #expect(printed.out.contains(#"column "Booking ID""#) && printed.out.contains(#"delimiter ";""#))
        // The printed TOML is a configuration's entity: the daemon's
        // configuration check accepts it under a store.
        let config = d.folder.appendingPathComponent("check.toml")
        try Data(
            """
            [daemon]
            state_dir = "check-state"
            socket = "check.sock"
            [[store]]
            name = "b"
            \(printed.out)
            """.utf8
        ).write(to: config)
        let (status, message) = try DaemonProcess.checkConfig(config.path)
        #expect(status == 0, "\(message)")
        let json = try Ctl.run(["--json", "infer", file.path, "--entity", "Booking"], socket: d.socket)
        let answer = try JSONDecoder().decode(InferAnswer.self, from: Data(json.out.utf8))
        #expect(answer.entity.name == "Booking" && answer.rows == 1_201 && answer.dialect.delimiter == ";")
        #expect(answer.entity.fields["price"] == "double?" && answer.nulls["price"] == ["NA": 600])
        #expect(answer.renamed == ["Booking ID": "Booking_ID"] && answer.evidence["price"]?.line == 1_202)
        #expect(answer.columns.map(\.field) == ["Booking_ID", "guest", "nights", "price", "arrival"])
        // DepotClient reads the same answer.
        let client = try await DepotClient(socketPath: d.socket).infer(file: file.path)
        #expect(client.entity.identifier == ["Booking_ID"] && client.toml == printed.out)
        // Bad input: a clear reason, exit 1, the daemon alive.
        let binary = d.folder.appendingPathComponent("photo.csv")
        try Data([0x89, 0x50, 0x4E, 0x47, 0, 0, 0x0D, 0x0A]).write(to: binary)
        let refused = try Ctl.run(["infer", binary.path], socket: d.socket)
        #expect(refused.status == 1 && refused.err.contains("is not text"), "\(refused.err)")
        let headerOnly = d.folder.appendingPathComponent("h.csv")
        try Data("a,b\n".utf8).write(to: headerOnly)
        let empty = try Ctl.run(["infer", headerOnly.path], socket: d.socket)
        #expect(empty.status == 1 && empty.err.contains("no records"), "\(empty.err)")
        let none = try d.request("POST", "/v1/infer", body: "")
        #expect(none.status == 400 && none.body.contains("empty"), "\(none.body)")
        let badFormat = try d.request("POST", "/v1/infer?format=xml", body: "a\n1\n")
        #expect(badFormat.status == 400 && badFormat.body.contains("format"), "\(badFormat.body)")
        #expect(try d.request("GET", "/v1/health").status == 200)
        // Nothing is left in the spool.
        let spool = d.folder.appendingPathComponent("state/spool")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: spool.path)) ?? []
        #expect(left.isEmpty, "\(left)")
    }

    @Test(
        "an import reads the dialect infer reports: delimiter, quote, null spellings, renamed columns, no header, Latin-1; kept in the job's record; bad values refused"
    )
    func dialect() async throws {
        let d = try DaemonProcess(config: DaemonProcess.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // Semicolons, single quotes, NA for a null end date, Latin-1 names.
        let file = d.folder.appendingPathComponent("semi.csv")
        var bytes = Array("Trip ID;name;destination;startDate;endDate;budget;isFavorite\n".utf8)
        bytes += Array("s1;'Caf".utf8) + [0xE9] + Array("; Paris';Paris;2025-01-02;NA;7;true\n".utf8)
        bytes += Array("s2;Plain;Rome;2025-01-03;-;12.5;false\n".utf8)
        try Data(bytes).write(to: file)
        let imported = try Ctl.run(
            [
                "import", file.path, "--store", "travel", "--entity", "Trip", "--delimiter", ";", "--quote", "'",
                "--nulls", "NA,-", "--encoding", "latin-1", "--column", "Trip ID=id"
            ], socket: d.socket)
        #expect(imported.status == 0 && imported.out.contains("2 inserted"), "\(imported.out)\(imported.err)")
        let client = DepotClient(socketPath: d.socket)
        let s1 = try #require(try await client.record(store: "travel", entity: "Trip", id: "s1"))
        #expect(s1.value["name"] == "Café; Paris" && s1.value["endDate"] == .null, "\(s1.value)")
        // The job's record keeps the dialect, so a resumed job reads alike.
        let jobs = try await client.jobs()
        let settings = try #require(jobs.last?.settings)
        #expect(settings.delimiter == ";" && settings.quote == "'" && settings.nulls == ["NA", "-"])
        #expect(settings.encoding == "latin-1" && settings.columns == ["Trip ID": "id"])
        // By path: renamed columns and no header.
        let headless = d.folder.appendingPathComponent("inbox/headless.csv")
        try Data("h1,Trip,Oslo,2025-02-01,3,true\nh2,Trip,Oslo,2025-02-02,4,false\n".utf8).write(to: headless)
        let columns =
            #""columns": {"field_1": "id", "field_2": "name", "field_3": "destination", "field_4": "startDate", "field_5": "budget", "field_6": "isFavorite"}"#
        let job = try d.request(
            "POST", "/v1/jobs",
            body:
                #"{"kind": "import", "store": "travel", "entity": "Trip", "path": "\#(headless.path)", "header": false, \#(columns)}"#
        )
        #expect(job.status == 202, "\(job.body)")
        let events = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(job.object["id"] as? String ?? "")/events")
        {
            ["succeeded", "failed"].contains(json($0)["state"] as? String ?? "")
        }
        #expect(json(events.last ?? "")["inserted"] as? Int == 2, "\(events.last ?? "")")
        // Quotes escaped by a backslash (issue 51), uploaded with --escape.
        let escaped = d.folder.appendingPathComponent("escaped.csv")
        try Data(
            #"""
            id,name,destination,startDate,budget,isFavorite
            e1,"H. Norwood \"Barney\" Ewell",Oslo,2025-02-01,3,true
            e2,"a \\ b",Oslo,2025-02-01,3,true

            """#.utf8
        ).write(to: escaped)
        let withEscape = try Ctl.run(
            ["import", escaped.path, "--store", "travel", "--entity", "Trip", "--escape", "\\"], socket: d.socket)
        #expect(withEscape.status == 0 && withEscape.out.contains("2 inserted"), "\(withEscape.out)\(withEscape.err)")
        let e1 = try #require(try await client.record(store: "travel", entity: "Trip", id: "e1"))
        let e2 = try #require(try await client.record(store: "travel", entity: "Trip", id: "e2"))
        #expect(e1.value["name"] == #"H. Norwood "Barney" Ewell"# && e2.value["name"] == #"a \ b"#)
        #expect(try await client.jobs().last?.settings.escape == "\\")
        // Bad values: refused before anything is spooled, saying what they must be.
        for (query, words) in [
            ("escape=x", "escape must be \\\\ (a backslash)"),
            ("delimiter=ab", "delimiter must be one character"), ("quote=x", "quote must be"),
            ("encoding=utf-16", "encoding must be utf-8 or latin-1"), ("header=maybe", "header must be true or false")
        ] {
            let r = try d.request("POST", "/v1/stores/travel/entities/Trip/import?\(query)", body: "id\n1\n")
            #expect(r.status == 400 && r.body.contains(words), "\(query): \(r.body)")
        }
    }

    /// The well-formed files of the third-party corpora (as InferTests takes them).
    static func corpusFiles() throws -> [URL] {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../DepotEngineTests/Fixtures").standardized
        var files: [URL] = []
        for (folder, skip) in [
            ("csv-spectrum/csvs", Set<String>()),
            ("tsv-utils-csv2tsv", ["header3.csv", "header4.csv", "invalid1.csv", "invalid2.csv"]),
            ("commons-csv-CSVFileParser", ["test.csv", "testCSV85.csv", "testCSV246.csv"])
        ] {
            let dir = fixtures.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
            where name.hasSuffix(".csv") && !skip.contains(name) {
                files.append(dir.appendingPathComponent(name))
            }
        }
        return files
    }

    @Test(
        "a newcomer's depotctl import FILE --create works on every well-formed corpus file; entities put and dropped over the API survive restarts; a configuration taking their name is refused at start"
    )
    func create() async throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var d = try DaemonProcess(folder: folder)
        let client = DepotClient(socketPath: d.socket)
        let files = try Self.corpusFiles()
        #expect(files.count >= 20)
        for (k, file) in files.enumerated() {
            let entity = "C\(k)"
            let r = try Ctl.run(
                ["import", file.path, "--store", "travel", "--entity", entity, "--create"], socket: d.socket)
            #expect(r.status == 0, "\(file.lastPathComponent): \(r.out)\(r.err)")
            #expect(r.out.contains("entity \(entity) (declared api)"), "\(file.lastPathComponent): \(r.out)")
        }
        let store = try await client.store("travel")
        let created = store.entities.filter { $0.declared == "api" }
        #expect(created.count == files.count && created.allSatisfy { $0.count > 0 }, "\(created.map(\.count))")
        #expect(store.entities.first { $0.name == "Trip" }?.declared == "config")
        // A second import of the same file changes nothing, with or without --create.
        let again = try Ctl.run(
            ["import", files[0].path, "--store", "travel", "--entity", "C0", "--create"], socket: d.socket)
        #expect(again.status == 0 && again.out.contains(" 0 inserted, 0 updated"), "\(again.out)")
        // PUT and DELETE.
        let body = #"{"identifier": "code", "fields": {"code": "string", "n": "int?"}, "indexes": [["n"]]}"#
        let put = try d.request("PUT", "/v1/stores/travel/entities/Codes", body: body)
        #expect(put.status == 201 && put.body.contains(#""declared":"api""#), "\(put.body)")
        #expect(try d.request("PUT", "/v1/stores/travel/entities/Codes", body: body).status == 200)
        let bad = try d.request(
            "PUT", "/v1/stores/travel/entities/Bad", body: #"{"identifier": "x", "fields": {"x": "text"}}"#)
        #expect(bad.status == 400 && bad.body.contains("invalid_schema"), "\(bad.body)")
        let config = try d.request("PUT", "/v1/stores/travel/entities/Trip", body: body)
        #expect(config.status == 409 && config.body.contains("declared in the configuration"), "\(config.body)")
        let full = try d.request("DELETE", "/v1/stores/travel/entities/C0")
        #expect(full.status == 409 && full.body.contains("holds"), "\(full.body)")
        // Kept across a restart.
        _ = d.stop()
        d = try DaemonProcess(folder: folder)
        let after = try await DepotClient(socketPath: d.socket).store("travel")
        #expect(after.entities.filter { $0.declared == "api" }.count == files.count + 1)
        #expect(after.entities.first { $0.name == "Codes" }?.indexes == [["n"]])
        let restarted = DepotClient(socketPath: d.socket)
        try await restarted.dropEntity("Codes", store: "travel")
        #expect(try d.request("DELETE", "/v1/stores/travel/entities/Codes").status == 404)
        let more = try await restarted.putEntity(
            "More", store: "travel", definition: #"{"identifier": ["a", "b"], "fields": {"b": "int", "a": "string"}}"#)
        #expect(more.declared == "api" && more.fields.map(\.name) == ["b", "a"] && more.identifier == ["a", "b"])
        // A configuration that declares C0 too is refused at start, naming both places.
        _ = d.stop()
        let toml = folder.appendingPathComponent("depot.toml")
        let original = try String(contentsOf: toml, encoding: .utf8)
        try Data(
            (original + """

                  [[store.entity]]
                  name = "C0"
                  identifier = "a"
                    [store.entity.fields]
                    a = "string"
                """).utf8
        ).write(to: toml)
        do {
            _ = try DaemonProcess(folder: folder)
            Issue.record("the daemon started with C0 declared twice")
        } catch let error as DaemonProcess.DaemonError {
            #expect(
                error.message.contains(
                    "\"C0\" is declared in the configuration ([[store.entity]]) and was created over the API"),
                "\(error.message)")
        }
    }

    @Test("a store may declare no entity: they all come from the API")
    func blankStore() async throws {
        let d = try DaemonProcess(
            config: """
                [daemon]
                state_dir = "state"
                socket = "depot.sock"

                [[store]]
                name = "blank"
                """)
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        #expect(try await client.store("blank").entities.isEmpty)
        let file = d.folder.appendingPathComponent("people.ndjson")
        try Data(#"{"who": "ada", "born": 1815}\#n{"who": "alan", "born": 1912}\#n"#.utf8).write(to: file)
        let r = try Ctl.run(
            ["import", file.path, "--store", "blank", "--entity", "People", "--create"], socket: d.socket)
        #expect(r.status == 0 && r.out.contains("2 inserted"), "\(r.out)\(r.err)")
        let people = try #require(try await client.store("blank").entities.first)
        #expect(people.name == "People" && people.declared == "api" && people.count == 2)
        #expect(people.fields.map(\.type) == ["string", "int"] && people.identifier == ["who"])
    }

    @Test("a [[watch]] reads its files with the dialect it names; a bad dialect setting fails the configuration check")
    func watchDialect() throws {
        let watch = """
            [[watch]]
            path = "inbox/semi"
            store = "travel"
            entity = "Trip"
            delimiter = ";"
            nulls = ["NA"]
            columns = { "Trip ID" = "id" }
            """
        let d = try DaemonProcess(config: DaemonProcess.config(extra: watch))
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let inbox = d.folder.appendingPathComponent("inbox/semi")
        let part = inbox.appendingPathComponent(".semi.csv.part")
        try Data(
            "Trip ID;name;destination;startDate;endDate;budget;isFavorite\nw1;A;Oslo;2025-01-01;NA;3;true\n".utf8
        ).write(to: part)
        #expect(rename(part.path, inbox.appendingPathComponent("semi.csv").path) == 0)
        let job = try watchJobEnded(d, file: "semi.csv")
        #expect(job["state"] as? String == "succeeded" && job["inserted"] as? Int == 1, "\(job)")
        #expect(job["delimiter"] as? String == ";" && (job["nulls"] as? [String]) == ["NA"], "\(job)")
        // A bad setting is named with its key.
        let bad = d.folder.appendingPathComponent("bad.toml")
        try Data(
            DaemonProcess.config(extra: watch.replacingOccurrences(of: #"delimiter = ";""#, with: #"delimiter = "ab""#))
                .utf8
        ).write(to: bad)
        let (status, message) = try DaemonProcess.checkConfig(bad.path)
        #expect(
            status == 78 && message.contains("watch[0]") && message.contains("delimiter must be one character"),
            "\(message)")
    }
}
