import DepotWire
import Foundation
import Testing

/// Saves through depotd (DESIGN §16, issue 31): `POST /v1/stores/S/save`.
@Suite("depotd: saves", .serialized)
struct SaveTests {
    static func save(_ d: DaemonProcess, _ body: String) throws -> HTTPResult {
        try d.request("POST", "/v1/stores/travel/save", body: body)
    }

    static func trip(_ id: String, budget: Double = 900) -> String {
        #"{"id":"\#(id)","name":"Trip \#(id)","startDate":"2025-05-02","budget":\#(budget),"isFavorite":false}"#
    }

    @Test("a save answers its token and each change; its changes are one history transaction by its author")
    func appliedSave() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let first = try Self.save(
            d,
            #"{"author":"web","changes":[{"insert":"Trip","record":\#(Self.trip("T1"))},"#
                + #"{"insert":"Trip","record":\#(Self.trip("T2"))}]}"#)
        #expect(first.status == 200, "\(first.body)")
        let answer = try JSONDecoder().decode(SaveAnswer.self, from: Data(first.body.utf8))
        #expect(answer.changes.map(\.effect) == ["inserted", "inserted"])
        #expect(answer.changes.map(\.identifier) == ["T1", "T2"])
        let second = try Self.save(
            d,
            #"{"changes":[{"update":"Trip","identifier":"T1","set":{"budget":950.5}},"#
                + #"{"delete":"Trip","identifier":"T2"},{"upsert":"Trip","record":\#(Self.trip("T3"))}]}"#)
        #expect(second.status == 200, "\(second.body)")
        let next = try JSONDecoder().decode(SaveAnswer.self, from: Data(second.body.utf8))
        #expect(next.changes.map(\.effect) == ["updated", "deleted", "inserted"])
        #expect(Int(next.token ?? "") ?? 0 > Int(answer.token ?? "") ?? .max)
        // The history holds each save as one transaction under the answered token.
        let history = try JSONDecoder().decode(
            TransactionPage.self, from: Data(try d.request("GET", "/v1/stores/travel/history").body.utf8)
        ).transactions
        #expect(history.map(\.token) == [answer.token, next.token].compactMap { $0 })
        #expect(history.first?.author == "web")
        // Logged records first, then updates, then deletes.
        #expect(history.last?.changes.map(\.kind) == [.insert, .update, .delete])
        let records = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"sort":["id"]}"#)
        let fetched = try JSONDecoder().decode(RecordsAnswer.self, from: Data(records.body.utf8)).records
        #expect(fetched.map { $0["id"] } == ["T1", "T3"])
        #expect(fetched.first?["budget"] == 950.5)
        // Nothing to change: no transaction, no token.
        let same = try Self.save(d, #"{"changes":[{"update":"Trip","identifier":"T1","set":{"budget":950.5}}]}"#)
        #expect(same.status == 200 && same.object["token"] is NSNull, "\(same.body)")
    }

    @Test(
        "a set of max_save_changes inserts fits the body limit; one more change is refused by count, a bigger body by size"
    )
    func limitsAgree() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        // Issue 51: 10,000 of the smallest inserts were more than
        // max_request_bytes (1 MiB) and got 413.
        func body(_ n: Int, pad: Int = 0) -> String {
            let changes = (0..<n).map { i in
                let id = "L\(i)" + String(repeating: "x", count: pad)
                return #"{"insert":"Trip","record":\#(Self.trip(id))}"#
            }
            return #"{"changes":["# + changes.joined(separator: ",") + "]}"
        }
        let full = body(10_000)
        #expect(full.utf8.count > 1 << 20)
        let saved = try Self.save(d, full)
        #expect(saved.status == 200, "\(saved.body.prefix(300))")
        let count = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#)
        #expect(count.object["count"] as? Int == 10_000)
        let more = try Self.save(d, body(10_001).replacingOccurrences(of: "\"L", with: "\"M"))
        #expect(more.status == 422 || more.status == 400, "\(more.body.prefix(300))")
        #expect(more.body.contains("10000") || more.body.contains("10,000"), "\(more.body.prefix(300))")
        let huge = try Self.save(d, body(10_000, pad: 1_000))
        #expect(huge.status == 413, "\(huge.body.prefix(300))")
    }

    @Test("a refused save lists every failing change by index with its code, 409 or 422, and writes nothing")
    func refusedSave() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        #expect(try Self.save(d, #"{"changes":[{"insert":"Trip","record":\#(Self.trip("T1"))}]}"#).status == 200)
        let conflict = try Self.save(
            d,
            #"{"changes":[{"insert":"Trip","record":\#(Self.trip("T9"))},{"insert":"Trip","record":\#(Self.trip("T1"))},"#
                + #"{"delete":"Trip","identifier":"T7"}]}"#)
        #expect(conflict.status == 409, "\(conflict.body)")
        let refusal = try JSONDecoder().decode(ErrorAnswer.self, from: Data(conflict.body.utf8)).error
        #expect(refusal.code == "save_refused")
        #expect(
            refusal.changes?.map(\.index) == [1, 2] && refusal.changes?.map(\.code) == ["already_exists", "not_found"])
        let invalid = try Self.save(
            d,
            #"{"changes":[{"update":"Trip","identifier":"T1","set":{"budget":"lots"}},"#
                + #"{"insert":"Trip","record":{"id":"T5"}},{"update":"Trip","identifier":"T1","set":{"name":"x"}}]}"#)
        #expect(invalid.status == 422, "\(invalid.body)")
        let reasons = try JSONDecoder().decode(ErrorAnswer.self, from: Data(invalid.body.utf8)).error
        #expect(reasons.code == "invalid_change")
        #expect(reasons.changes?.map(\.code) == ["invalid_value", "invalid_value", "duplicate_change"])
        #expect(reasons.changes?.first?.field == "budget")
        // A token that is not one, or was never issued.
        let guarded = try Self.save(
            d, #"{"changes":[{"update":"Trip","identifier":"T1","set":{"budget":1},"if_token":"x1"}]}"#)
        #expect(guarded.status == 422 && guarded.body.contains("if_token"), "\(guarded.body)")
        let never = try Self.save(
            d, #"{"changes":[{"update":"Trip","identifier":"T1","set":{"budget":1},"if_token":"77"}]}"#)
        #expect(never.status == 422 && never.body.contains("never issued"), "\(never.body)")
        #expect(try Self.save(d, #"{"changes":[{"insert":"Nope","record":{}}]}"#).status == 404)
        #expect(try Self.save(d, #"{"changes":[]}"#).status == 400)
        #expect(try Self.save(d, #"{"changes":[{"insert":"Trip","delete":"Trip"}]}"#).status == 400)
        // Nothing of them was written: T1 alone, one transaction.
        let count = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#)
        #expect(count.object["count"] as? Int == 1)
        let history = try d.request("GET", "/v1/stores/travel/history").object["transactions"] as? [Any]
        #expect(history?.count == 1)
    }

    @Test("an idempotency key makes a save happen once: a retry answers the first answer, replayed, writing nothing")
    func idempotency() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let body = #"{"idempotency_key":"order-7781","changes":[{"insert":"Trip","record":\#(Self.trip("T1"))}]}"#
        let first = try Self.save(d, body)
        #expect(first.status == 200 && first.object["replayed"] == nil, "\(first.body)")
        // The same body again (its keys in another order): the first answer, nothing written.
        let reordered = #"{"changes":[{"insert":"Trip","record":\#(Self.trip("T1"))}],"idempotency_key":"order-7781"}"#
        let retry = try Self.save(d, reordered)
        #expect(retry.status == 200 && retry.object["replayed"] as? Bool == true, "\(retry.body)")
        #expect(retry.object["token"] as? String == first.object["token"] as? String)
        let history = try d.request("GET", "/v1/stores/travel/history").object["transactions"] as? [Any]
        #expect(history?.count == 1)
        // The key with another body.
        let other = try Self.save(
            d, #"{"idempotency_key":"order-7781","changes":[{"delete":"Trip","identifier":"T1"}]}"#)
        #expect(other.status == 422 && other.body.contains("idempotency_key_reused"), "\(other.body)")
        #expect(
            try Self.save(d, #"{"idempotency_key":"","changes":[{"delete":"Trip","identifier":"T1"}]}"#).status == 400)
        // One record's writes take the key as a header.
        let path = "/v1/stores/travel/entities/Trip/records/T1"
        let patch = try d.request("PATCH", path, body: #"{"budget":1000}"#, headers: ["Idempotency-Key": "p1"])
        let again = try d.request("PATCH", path, body: #"{"budget":1000}"#, headers: ["Idempotency-Key": "p1"])
        #expect(patch.status == 200 && again.object["replayed"] as? Bool == true, "\(again.body)")
        #expect(again.headers["etag"] == patch.headers["etag"])
        #expect((try d.request("GET", "/v1/stores/travel/history").object["transactions"] as? [Any])?.count == 2)
        // The header's key with another change of the record is refused, writing nothing.
        let otherPatch = try d.request("PATCH", path, body: #"{"budget":2000}"#, headers: ["Idempotency-Key": "p1"])
        #expect(otherPatch.status == 422 && otherPatch.body.contains("idempotency_key_reused"), "\(otherPatch.body)")
        let otherDelete = try d.request("DELETE", path, headers: ["Idempotency-Key": "p1"])
        #expect(otherDelete.status == 422, "\(otherDelete.body)")
        #expect((try d.request("GET", "/v1/stores/travel/history").object["transactions"] as? [Any])?.count == 2)
        #expect(try d.request("GET", path).object["budget"] as? Double == 1000)
    }

    @Test(
        "a depotd stopped by SIGTERM leaves its store whole in the file: no WAL beside it, and a copy of the file alone holds every answered save"
    )
    func stopLeavesTheFileWhole() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        for k in 0..<20 {
            let record = Self.trip("S\(k)", budget: Double(k))
            let answer = try Self.save(d, #"{"changes":[{"insert":"Trip","record":\#(record)}]}"#)
            #expect(answer.status == 200, "\(answer.body)")
        }
        // A read first: the store's readers are open when it stops.
        let count = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#)
        #expect(count.object["count"] as? Int == 20)
        #expect(d.stop() == 0)
        // A copy of the file alone, as a backup after `systemctl stop` makes it.
        let alone = try d.storeFileAlone("SELECT count(*), sum(budget) FROM Trip")
        #expect(alone.leftBeside.isEmpty, "\(alone.leftBeside)")
        #expect(alone.answer == "20|190.0\n")
    }
}
