import ChildProcessSupport
import DepotWire
import Foundation
import Testing

/// Saves under concurrency and crashes (issue 31, "Done when"): read-modify-
/// write increments with If-Match and retries lose no update; a save killed
/// by `kill -9` anywhere is wholly there or wholly absent. scripts/test runs
/// them on their own, after the suite (DEPOT_LOAD_TESTS=1): 16 clients
/// saving for a minute alongside it starved other tests past their deadlines.
@Suite(
    "depotd: saves under concurrency and kill -9", .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["DEPOT_LOAD_TESTS"] == "1", "scripts/test runs them on their own"))
struct SaveDurabilityTests {
    static let entities =
        RecordTests.seats + """

              [[store.entity]]
              name = "Counter"
              identifier = "id"

                [store.entity.fields]
                id = "string"
                n = "int"
            """

    /// Runs `body(k)` for k in 0..<count, each on a thread of its own; the
    /// errors they threw.
    static func threads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [any Error] {
        let done = DispatchGroup()
        let errors = Errors()
        for k in 0..<count {
            done.enter()
            let thread = Thread {
                do { try body(k) } catch { errors.add(error) }
                done.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        done.wait()
        return errors.all
    }

    final class Errors: @unchecked Sendable {
        private let lock = NSLock()
        private var errors: [any Error] = []
        func add(_ error: any Error) { lock.withLock { errors.append(error) } }
        var all: [any Error] { lock.withLock { errors } }
    }

    struct Unexpected: Error, CustomStringConvertible { var description: String }

    @Test(
        "16 clients doing 2,000 read-modify-write increments each on 100 records, with If-Match and retries, lose none")
    func increments() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(extra: Self.entities))
        defer { d.stop() }
        let path = "/v1/stores/travel/entities/Counter/records/"
        var inserts: [String] = []
        for k in 0..<100 { inserts.append(#"{"insert":"Counter","record":{"id":"c\#(k)","n":0}}"#) }
        let setup = try d.request(
            "POST", "/v1/stores/travel/save", body: #"{"changes":["# + inserts.joined(separator: ",") + "]}")
        #expect(setup.status == 200, "\(setup.body)")
        let socket = d.socket
        let retries = Errors()
        let errors = Self.threads(16) { client in
            var random = SystemRandomNumberGenerator()
            for _ in 0..<2_000 {
                let id = "c\(Int.random(in: 0..<100, using: &random))"
                while true {
                    let read = try UnixHTTP.request(socket: socket, method: "GET", path: path + id)
                    guard read.status == 200, let n = read.object["n"] as? Int, let etag = read.headers["etag"] else {
                        throw Unexpected(description: "GET \(read.status) \(read.body)")
                    }
                    let write = try UnixHTTP.request(
                        socket: socket, method: "PATCH", path: path + id, body: Data(#"{"n":\#(n + 1)}"#.utf8),
                        headers: ["If-Match": etag])
                    if write.status == 200 { break }
                    guard write.status == 409 else {
                        throw Unexpected(description: "PATCH \(write.status) \(write.body)")
                    }
                    retries.add(Unexpected(description: "retry"))
                }
            }
        }
        #expect(errors.isEmpty, "\(errors.prefix(3))")
        let records = try d.request("POST", "/v1/stores/travel/entities/Counter/fetch", body: "{}")
        let values = (records.object["records"] as? [[String: Any]] ?? []).map { $0["n"] as? Int ?? 0 }
        #expect(values.count == 100 && values.reduce(0, +) == 32_000, "\(values.reduce(0, +))")
        // Every increment is one transaction of the history (and the setup one more), read page by page.
        var transactions = 0
        var after = "0"
        while true {
            let page = try d.request("GET", "/v1/stores/travel/history?entity=Counter&after=\(after)&limit=5000")
            let items = page.object["transactions"] as? [[String: Any]] ?? []
            guard let last = items.last?["token"] as? String else { break }
            transactions += items.count
            after = last
        }
        #expect(transactions == 32_001)
        print("increments: \(retries.all.count) conflicts retried of 32,000")
    }

    @Test("a 1,000-change save over three entities killed by kill -9 at random points is wholly there or wholly absent")
    func killedSaves() throws {
        let folder = try DaemonProcess.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = DaemonProcess.config(extra: Self.entities)
        func body(_ round: Int) -> String {
            var changes: [String] = []
            for k in 0..<334 {
                changes.append(
                    #"{"insert":"Trip","record":{"id":"r\#(round)-\#(k)","name":"n","startDate":"2025-01-01","#
                        + #""budget":1,"isFavorite":false}}"#)
            }
            for k in 0..<333 {
                changes.append(#"{"upsert":"Seat","record":{"flight":"r\#(round)","number":\#(k),"holder":"h"}}"#)
                changes.append(#"{"insert":"Counter","record":{"id":"r\#(round)-\#(k)","n":\#(k)}}"#)
            }
            return #"{"author":"round-\#(round)","changes":["# + changes.joined(separator: ",") + "]}"
        }
        /// How much of round `round` the store holds: records and history changes.
        func held(_ d: DaemonProcess, _ round: Int) throws -> (records: Int, transactions: Int, changes: Int) {
            var records = 0
            for (entity, predicate) in [
                ("Trip", #"id BEGINSWITH 'r\#(round)-'"#), ("Seat", #"flight == 'r\#(round)'"#),
                ("Counter", #"id BEGINSWITH 'r\#(round)-'"#)
            ] {
                let count = try d.request(
                    "POST", "/v1/stores/travel/entities/\(entity)/fetch",
                    body: #"{"result":"count","where":"\#(predicate)"}"#)
                records += count.object["count"] as? Int ?? -1_000_000
            }
            let history = try d.request("GET", "/v1/stores/travel/history?author=round-\(round)&limit=10")
            let transactions = history.object["transactions"] as? [[String: Any]] ?? []
            let changes = transactions.reduce(0) { $0 + (($1["changes"] as? [Any])?.count ?? 0) }
            return (records, transactions.count, changes)
        }
        var d = try DaemonProcess(folder: folder, config: config)
        // One save timed whole: the kill points fall across its length.
        let started = Date()
        #expect(try d.request("POST", "/v1/stores/travel/save", body: body(0)).status == 200)
        let length = Date().timeIntervalSince(started)
        var outcomes: [Int] = []
        for round in 1...50 {
            let socket = d.socket
            let text = body(round)
            let sender = Thread {
                _ = try? UnixHTTP.request(
                    socket: socket, method: "POST", path: "/v1/stores/travel/save", body: Data(text.utf8))
            }
            sender.start()
            usleep(UInt32(Double.random(in: 0...(length * 1.5)) * 1_000_000))  // the kill point, not a wait
            kill(d.process.processIdentifier, SIGKILL)
            d.process.waitForExit()
            d = try DaemonProcess(folder: folder)
            let found = try held(d, round)
            #expect(
                found == (0, 0, 0) || found == (1_000, 1, 1_000),
                "round \(round): \(found.records) records, \(found.transactions) transactions, \(found.changes) changes"
            )
            outcomes.append(found.records)
        }
        d.stop()
        print("killed saves: \(outcomes.filter { $0 > 0 }.count) of 50 committed before the kill, the rest absent")
    }
}
