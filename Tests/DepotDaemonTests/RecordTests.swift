import DepotWire
import Foundation
import Testing

/// One record through depotd (DESIGN §16, issue 31): `GET`, `PUT`,
/// `PATCH`, `DELETE` on `/v1/stores/S/entities/E/records/ID`, the token of
/// the record's last change as its `ETag`, `If-Match`, merge policies.
@Suite("depotd: one record, ETag and If-Match", .serialized)
struct RecordTests {
    static let seats = """

          [[store.entity]]
          name = "Seat"
          identifier = ["flight", "number"]
          history = "values"

            [store.entity.fields]
            flight = "string"
            number = "int"
            holder = "string?"
            price = "double?"
        """

    static func start() throws -> DaemonProcess {
        try DaemonProcess(config: DaemonProcess.config(extra: seats))
    }

    static let path = "/v1/stores/travel/entities/Trip/records/"

    static func trip(_ id: String, budget: Double = 900) -> String {
        #"{"id":"\#(id)","name":"Trip \#(id)","startDate":"2025-05-02","budget":\#(budget),"isFavorite":false}"#
    }

    /// The ETag's token, without its quotes.
    static func etag(_ r: HTTPResult) -> String {
        (r.headers["etag"] ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }

    @Test("GET answers the record with the token of its last change as its ETag; 404 names what is missing")
    func get() throws {
        let d = try Self.start()
        defer { d.stop() }
        let put = try d.request("PUT", Self.path + "T1", body: Self.trip("T1"))
        #expect(put.status == 200, "\(put.body)")
        let saved = try JSONDecoder().decode(SaveAnswer.self, from: Data(put.body.utf8))
        #expect(saved.changes.map(\.effect) == ["inserted"])
        #expect(Self.etag(put) == saved.token && saved.token != nil)
        let got = try d.request("GET", Self.path + "T1")
        #expect(got.status == 200 && Self.etag(got) == saved.token, "\(got.headers) \(got.body)")
        #expect(got.object["budget"] as? Double == 900 && got.object["startDate"] as? String == "2025-05-02")
        #expect(got.object["destination"] is NSNull)
        // The same token as the fetch's history: a live client sees its write under it.
        let history = try d.request("GET", "/v1/stores/travel/history").object["transactions"] as? [[String: Any]]
        #expect(history?.last?["token"] as? String == saved.token)
        let missing = try d.request("GET", Self.path + "T9")
        #expect(missing.status == 404 && missing.body.contains("not_found") && missing.body.contains(#"Trip \"T9\""#))
        #expect(try d.request("GET", "/v1/stores/travel/entities/Nope/records/T1").status == 404)
        // An identifier that is not URL-encoded text, or not of the field's type.
        #expect(try d.request("GET", "/v1/stores/travel/entities/Seat/records/%ZZ").status == 400)
        #expect(try d.request("GET", "/v1/stores/travel/entities/Seat/records/AF1").status == 400)
        #expect(try d.request("GET", "/v1/stores/travel/entities/Seat/records/%5B%22AF1%22%5D").status == 400)
    }

    @Test(
        "one rule for identifiers: text of 1 to 4,096 bytes in saves, record routes and imports; longer URLs answer 414 at once",
        .timeLimit(.minutes(2)))
    func identifierRule() throws {
        let d = try Self.start()
        defer { d.stop() }
        // Issue 51: "" was saved but its URL was 404; ids over ~16 KB got
        // 400 with an empty body; a 300 KB request target hung for 60 s.
        let empty = try d.request(
            "POST", "/v1/stores/travel/save", body: #"{"changes":[{"insert":"Trip","record":\#(Self.trip(""))}]}"#)
        #expect(empty.status == 422 && empty.body.contains("never empty"), "\(empty.body)")
        let longest = String(repeating: "a", count: 4_096)
        let fits = try d.request("PUT", Self.path + longest, body: Self.trip(longest))
        #expect(fits.status == 200, "\(fits.body.prefix(200))")
        #expect(try d.request("GET", Self.path + longest).status == 200)
        let over = String(repeating: "b", count: 4_097)
        let refused = try d.request(
            "POST", "/v1/stores/travel/save", body: #"{"changes":[{"insert":"Trip","record":\#(Self.trip(over))}]}"#)
        #expect(refused.status == 422 && refused.body.contains("at most 4096 bytes"), "\(refused.body.prefix(300))")
        let put = try d.request("PUT", Self.path + over, body: Self.trip(over))
        #expect(put.status == 422, "\(put.body.prefix(300))")
        // An import refuses the row, with the reason.
        let ndjson =
            #"{"id":"","name":"n","startDate":"2025-05-02","budget":1,"isFavorite":false}"# + "\n"
            + #"{"id":"ok1","name":"n","startDate":"2025-05-02","budget":1,"isFavorite":false}"# + "\n"
        let upload = try UnixHTTP.request(
            socket: d.socket, method: "POST", path: "/v1/stores/travel/entities/Trip/import?format=ndjson",
            body: Data(ndjson.utf8), contentType: "application/x-ndjson")
        #expect(upload.status == 202, "\(upload.body)")
        let last = try d.jobEnded(upload.object["id"] as? String ?? "")
        #expect(last["inserted"] as? Int == 1 && last["rejected"] as? Int == 1, "\(last)")
        // Longer request targets: 414 with a JSON error, at once, and closed.
        for size in [20_000, 300_000] {
            let target = Self.path + String(repeating: "c", count: size)
            let started = ContinuousClock.now
            let answer = try UnixHTTP.request(socket: d.socket, method: "GET", path: target)
            #expect(answer.status == 414, "\(size): \(answer.status) \(answer.body.prefix(200))")
            #expect(
                answer.body.contains("too_large") && answer.body.contains("request target"),
                "\(answer.body.prefix(200))")
            #expect(ContinuousClock.now - started < .seconds(10))
        }
        let header = try UnixHTTP.request(
            socket: d.socket, method: "GET", path: "/v1/health",
            headers: ["X-Long": String(repeating: "h", count: 20_000)])
        #expect(
            header.status == 431 && header.body.contains("headers are too large"), "\(header.status) \(header.body)")
        let fd = try UnixHTTP.connect(d.socket)
        defer { close(fd) }
        UnixHTTP.send(fd, Data("HELLO THERE\r\n\r\n".utf8))
        var raw = Data()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            raw.append(contentsOf: buffer[0..<n])
        }
        let garbage = UnixHTTP.parse(raw)
        #expect(garbage.status == 400 && garbage.body.contains("bad_request"), "\(garbage.status) \(garbage.body)")
        #expect(try d.request("GET", "/v1/health").status == 200)
    }

    @Test("a compound identifier is its JSON array, URL-encoded, in every method")
    func compound() throws {
        let d = try Self.start()
        defer { d.stop() }
        let seat = "/v1/stores/travel/entities/Seat/records/%5B%22AF%2F1%22%2C12%5D"  // ["AF/1",12]
        let put = try d.request("PUT", seat, body: #"{"holder":"Ada","price":120}"#)
        #expect(put.status == 200, "\(put.body)")
        let got = try d.request("GET", seat)
        #expect(got.object["flight"] as? String == "AF/1" && got.object["number"] as? Int == 12, "\(got.body)")
        // A body naming another identifier than its path is refused.
        let other = try d.request("PUT", seat, body: #"{"flight":"AF/2","holder":"Bo"}"#)
        #expect(other.status == 400 && other.body.contains("path"), "\(other.body)")
        let patch = try d.request("PATCH", seat, body: #"{"holder":"Bo"}"#, headers: ["If-Match": got.headers["etag"]!])
        #expect(patch.status == 200, "\(patch.body)")
        #expect(try d.request("DELETE", seat).status == 200)
        #expect(try d.request("GET", seat).status == 404)
        let gone = try d.request("DELETE", seat)
        let message = try JSONDecoder().decode(ErrorAnswer.self, from: Data(gone.body.utf8)).error.message
        #expect(gone.status == 404 && message == #"there is no Seat ["AF/1",12]"#, "\(gone.body)")
    }

    @Test("If-Match: disjoint edits merge, the same field is a 409 conflict with base, stored and yours")
    func ifMatch() throws {
        let d = try Self.start()
        defer { d.stop() }
        let seat = "/v1/stores/travel/entities/Seat/records/%5B%22AF1%22%2C1%5D"
        #expect(try d.request("PUT", seat, body: #"{"holder":"Ada","price":100}"#).status == 200)
        let read = try d.request("GET", seat).headers["etag"]!
        // Someone else changes the price.
        let other = try d.request("PATCH", seat, body: #"{"price":110}"#)
        #expect(
            other.status == 200 && Self.etag(other) != read.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        // This client, read before, changes the holder: merged.
        let mine = try d.request("PATCH", seat, body: #"{"holder":"Bea"}"#, headers: ["If-Match": read])
        #expect(mine.status == 200, "\(mine.body)")
        let now = try d.request("GET", seat)
        #expect(now.object["holder"] as? String == "Bea" && now.object["price"] as? Double == 110)
        #expect(Self.etag(now) == Self.etag(mine))
        // ... and the price too: a conflict, nothing written.
        let clash = try d.request("PATCH", seat, body: #"{"price":90,"holder":"Cy"}"#, headers: ["If-Match": read])
        #expect(clash.status == 409, "\(clash.body)")
        let error = try JSONDecoder().decode(ErrorAnswer.self, from: Data(clash.body.utf8)).error
        #expect(error.code == "conflict")
        let fields = error.changes?.first?.conflicts ?? []
        #expect(fields.map(\.field) == ["holder", "price"], "\(clash.body)")
        #expect(fields.last?.base == 100 && fields.last?.stored == 110 && fields.last?.yours == 90)
        #expect(fields.first?.base == "Ada" && fields.first?.stored == "Bea" && fields.first?.yours == "Cy")
        #expect(try d.request("GET", seat).object["holder"] as? String == "Bea")
        // The same under store-trump: the stored values stay; under object-trump, the client's win.
        let kept = try d.request(
            "PATCH", seat + "?merge=store-trump", body: #"{"price":90}"#, headers: ["If-Match": read])
        #expect(kept.status == 200 && kept.body.contains("unchanged"), "\(kept.body)")
        // A save that changed nothing answers the record's ETag as the save
        // read it (no read after the save).
        let reread = try d.request("GET", seat)
        #expect(!Self.etag(kept).isEmpty && Self.etag(kept) == Self.etag(reread))
        let same = try d.request("PATCH", seat, body: #"{"price":110}"#)
        #expect(same.body.contains("unchanged") && Self.etag(same) == Self.etag(kept), "\(same.body)")
        let won = try d.request(
            "PATCH", seat + "?merge=object-trump", body: #"{"price":90}"#, headers: ["If-Match": read])
        #expect(won.status == 200 && won.body.contains("updated"), "\(won.body)")
        #expect(try d.request("GET", seat).object["price"] as? Double == 90)
        // A delete read before the changes: a conflict.
        let delete = try d.request("DELETE", seat, headers: ["If-Match": read])
        #expect(delete.status == 409, "\(delete.body)")
        // Bad If-Match, unknown merge, a token never issued.
        #expect(try d.request("PATCH", seat, body: #"{"price":1}"#, headers: ["If-Match": "\"x\""]).status == 400)
        #expect(try d.request("PATCH", seat + "?merge=mine", body: #"{"price":1}"#).status == 400)
        let never = try d.request("PATCH", seat, body: #"{"price":1}"#, headers: ["If-Match": "\"99999\""])
        #expect(never.status == 422 && never.body.contains("never issued"), "\(never.body)")
        // If-Match: * (any stored record) and the current ETag pass.
        let current = try d.request("GET", seat).headers["etag"]!
        #expect(try d.request("PATCH", seat, body: #"{"price":2}"#, headers: ["If-Match": current]).status == 200)
        #expect(try d.request("PATCH", seat, body: #"{"price":3}"#, headers: ["If-Match": "*"]).status == 200)
    }
}
