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
}
