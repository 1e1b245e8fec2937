import ChildProcessSupport
import Foundation
import Testing

@testable import DepotClient

/// Issue 51, tried as a careless user would, against a real depotd: an
/// upload through a symbolic link, a job's `where` with `arguments`, an
/// aggregate that overflows, NDJSON whose records each name keys of their own.
///
/// On their own, after the suite (DEPOT_CARELESS_TESTS=1, scripts/test): run
/// beside the whole suite, other suites' clients saw their daemons close
/// connections before answering (six runs of seven here; none without this
/// suite, the cause not found yet).
@Suite(
    "Careless users against a real depotd", .serialized, .timeLimit(.minutes(5)),
    .enabled(
        if: ProcessInfo.processInfo.environment["DEPOT_CARELESS_TESTS"] == "1", "scripts/test runs them on their own"))
struct CarelessUserTests {
    static func count(_ d: DaemonProcess) throws -> Int? {
        let answer = try d.request("POST", "/v1/stores/travel/entities/Trip/fetch", body: #"{"result":"count"}"#)
        return (try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])?["count"] as? Int
    }

    @Test("an upload through a symbolic link sends the file it leads to, for import and infer")
    func uploadThroughLink() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        // Outside import_roots (the inbox), so depotctl uploads it.
        let elsewhere = try DaemonProcess.makeFolder()
        let target = elsewhere.appendingPathComponent("trips.csv")
        try Data(tripsCSV(5_000).utf8).write(to: target)
        let link = d.folder.appendingPathComponent("link.csv")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let imported = try Ctl.run(
            ["import", link.path, "--store", "travel", "--entity", "Trip", "--json"], socket: d.socket)
        #expect(imported.status == 0, "\(imported.err)")
        #expect(imported.json["state"] as? String == "succeeded", "\(imported.out)")
        #expect(imported.json["inserted"] as? Int == 5_000, "\(imported.out)")
        #expect(try Self.count(d) == 5_000)
        let inferred = try Ctl.run(["infer", link.path], socket: d.socket)
        #expect(inferred.status == 0, "\(inferred.err)")
        #expect(inferred.out.contains("budget"), "\(inferred.out)")
        // A link to something that is not a file is refused by the client, saying so.
        let fifo = d.folder.appendingPathComponent("fifo.csv")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let refused = try Ctl.run(["import", fifo.path, "--store", "travel", "--entity", "Trip"], socket: d.socket)
        #expect(refused.status != 0)
        #expect(refused.err.contains("not a regular file"), "\(refused.err)")
    }

    @Test("import --create of a file the inference refuses names the user's file, not the daemon's spool file")
    func createNamesTheFile() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let file = d.folder.appendingPathComponent("only-header.csv")
        try Data("a,b\n".utf8).write(to: file)
        let refused = try Ctl.run(
            ["import", file.path, "--store", "travel", "--entity", "Data", "--create"], socket: d.socket)
        #expect(refused.status != 0)
        #expect(refused.err.contains("only-header.csv") && !refused.err.contains("create-"), "\(refused.err)")
    }

    @Test("a file that changes while it is sent is not sent: the client says so and nothing arrives")
    func fileChangedWhileSent() throws {
        let folder = try DaemonProcess.makeFolder()
        let path = folder.appendingPathComponent("big.csv").path
        try Data(repeating: UInt8(ascii: "x"), count: 3 << 20).write(to: URL(fileURLWithPath: path))
        // Cut short after the first chunk.
        let shrunk = try UploadFile(path: path)
        #expect(shrunk.size == 3 << 20)
        #expect(try shrunk.next()?.count == 1 << 20)
        #expect(truncate(path, 1 << 20) == 0)
        #expect(throws: DepotClientError.self) {
            while try shrunk.next() != nil {}
        }
        // Grown after it was read whole.
        let grown = try UploadFile(path: path)
        var sent = 0
        let error = #expect(throws: DepotClientError.self) {
            while let chunk = try grown.next() {
                sent += chunk.count
                if sent == grown.size {
                    let handle = try #require(FileHandle(forWritingAtPath: path))
                    handle.seekToEndOfFile()
                    handle.write(Data("more\n".utf8))
                    try handle.close()
                }
            }
        }
        #expect(error?.message.contains("the file changed while it was sent") == true, "\(String(describing: error))")
        // Unchanged, it reads to its end.
        let whole = try UploadFile(path: path)
        var count = 0
        while let chunk = try whole.next() { count += chunk.count }
        #expect(count == whole.size)
    }

    @Test("a delete, update, dedupe and export job's where takes arguments, as a fetch's does")
    func jobArguments() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let file = d.folder.appendingPathComponent("inbox/trips.csv")
        try Data(tripsCSV(90).utf8).write(to: file)
        let load = try Ctl.run(["import", file.path, "--store", "travel", "--entity", "Trip"], socket: d.socket)
        #expect(load.status == 0, "\(load.err)")
        func run(_ body: String) throws -> [String: Any] {
            let answer = try d.request("POST", "/v1/jobs", body: body)
            #expect(answer.status == 202 || answer.status == 200, "\(answer.body)")
            let id = try #require(
                (try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])?["id"] as? String)
            return try d.jobEnded(id)
        }
        let updated = try run(
            #"{"kind":"update","store":"travel","entity":"Trip","where":"destination == $d","arguments":{"d":"City 1"},"set":{"isFavorite":true}}"#
        )
        #expect(updated["state"] as? String == "succeeded", "\(updated)")
        #expect(updated["where"] as? String == "destination == $d")
        #expect((updated["arguments"] as? [String: Any])?["d"] as? String == "City 1", "\(updated)")
        #expect((updated["updated"] as? Int ?? 0) + (updated["unchanged"] as? Int ?? 0) == 10, "\(updated)")
        let computed = try run(
            #"{"kind":"update","store":"travel","entity":"Trip","where":"destination == $d","arguments":{"d":"City 2","add":1000},"compute":{"budget":"budget + $add"}}"#
        )
        #expect(computed["updated"] as? Int == 10, "\(computed)")
        let exported = try run(
            #"{"kind":"export","store":"travel","entity":"Trip","where":"budget > $min","arguments":{"min":1000}}"#)
        #expect(exported["state"] as? String == "succeeded", "\(exported)")
        #expect(exported["exported"] as? Int == 10, "\(exported)")
        let deleted = try run(
            #"{"kind":"delete","store":"travel","entity":"Trip","where":"destination == $d","arguments":{"d":"City 3"}}"#
        )
        #expect(deleted["deleted"] as? Int == 10, "\(deleted)")
        #expect(try Self.count(d) == 80)
        // A placeholder without its value is still refused before anything runs.
        let missing = try d.request(
            "POST", "/v1/jobs", body: #"{"kind":"delete","store":"travel","entity":"Trip","where":"budget > $x"}"#)
        #expect(missing.status == 400 && missing.body.contains("$x"), "\(missing.body)")
        let wrong = try d.request(
            "POST", "/v1/jobs",
            body: #"{"kind":"delete","store":"travel","entity":"Trip","where":"budget > $x","arguments":{"x":[1]}}"#)
        #expect(wrong.status == 400 && wrong.body.contains("arguments.x"), "\(wrong.body)")
    }

    @Test("a sum or average that overflows answers 422 out_of_range, not 500")
    func aggregateOverflow() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let save = try d.request(
            "POST", "/v1/stores/travel/save",
            body:
                #"{"changes":[{"insert":"Trip","record":{"id":"a","name":"a","startDate":"2025-01-01","budget":1e308,"isFavorite":false}},{"insert":"Trip","record":{"id":"b","name":"b","startDate":"2025-01-01","budget":1e308,"isFavorite":false}}]}"#
        )
        #expect(save.status == 200, "\(save.body)")
        for function in ["sum", "avg"] {
            let answer = try d.request(
                "POST", "/v1/stores/travel/entities/Trip/aggregate",
                body: #"{"field":"budget","functions":["\#(function)"]}"#)
            #expect(answer.status == 422 && answer.body.contains("out_of_range"), "\(function): \(answer.body)")
        }
        let fine = try d.request(
            "POST", "/v1/stores/travel/entities/Trip/aggregate", body: #"{"field":"budget","functions":["max"]}"#)
        #expect(fine.status == 200, "\(fine.body)")
    }

    @Test("an entity a processor reads cannot be dropped until the processor is; then it is, and stays gone")
    func dropUnderProcessor() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        let put = try d.request(
            "PUT", "/v1/stores/travel/entities/Codes", body: #"{"identifier": "code", "fields": {"code": "string"}}"#)
        #expect(put.status == 201, "\(put.body)")
        let processor = try d.request(
            "POST", "/v1/stores/travel/processors", body: #"{"name": "tag", "entity": "Codes", "batch": 10}"#)
        #expect(processor.status == 201 || processor.status == 200, "\(processor.body)")
        let refused = try d.request("DELETE", "/v1/stores/travel/entities/Codes")
        #expect(refused.status == 409 && refused.body.contains(#"processor \"tag\""#), "\(refused.body)")
        #expect(try d.request("GET", "/v1/stores/travel").body.contains(#""Codes""#))
        #expect(try d.request("DELETE", "/v1/stores/travel/processors/tag").status == 204)
        let dropped = try d.request("DELETE", "/v1/stores/travel/entities/Codes")
        #expect(dropped.status == 204, "\(dropped.body)")
        #expect(!(try d.request("GET", "/v1/stores/travel").body.contains(#""Codes""#)))
        #expect(!(try d.request("GET", "/v1/stores/travel/processors").body.contains("tag")))
    }

    @Test("health answers at once, and says the store is ok, while another process holds the store's write lock")
    func healthDoesNotWaitForTheWriter() throws {
        let d = try DaemonProcess()
        defer { d.stop() }
        // Someone else's write transaction (an import's save stands for it
        // the same way): sqlite3 holds the lock while its shell waits on a
        // FIFO. FIFOs opened here, not Foundation's Pipe: a Pipe's ends can
        // be closed twice (by Process and by FileHandle), closing whatever
        // another test had opened under the same number meanwhile.
        let locked = d.folder.appendingPathComponent("locked").path
        let release = d.folder.appendingPathComponent("release").path
        #expect(mkfifo(locked, 0o600) == 0 && mkfifo(release, 0o600) == 0)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        holder.arguments = [
            d.folder.appendingPathComponent("state/travel.sqlite").path, "BEGIN IMMEDIATE;",
            ".shell printf locked > \(locked); cat \(release) > /dev/null", "COMMIT;"
        ]
        holder.standardInput = FileHandle.nullDevice
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.runClosingFiles()
        // Opened once the shell opens it: the lock is held from then on.
        let reader = open(locked, O_RDONLY | O_CLOEXEC)
        var said = [UInt8](repeating: 0, count: 16)
        let count = read(reader, &said, said.count)
        close(reader)
        #expect(count > 0 && String(decoding: said[..<max(count, 0)], as: UTF8.self) == "locked")
        // Issue 51: health asked the writer, so it waited for the lock (up
        // to the 10 s busy timeout) and then said the store was not ok.
        let health = try d.request("GET", "/v1/health")
        let writer = open(release, O_WRONLY | O_CLOEXEC)
        close(writer)
        holder.waitForExit()
        let stores = health.object["stores"] as? [[String: Any]] ?? []
        #expect(health.status == 200 && stores.first?["ok"] as? Bool == true, "\(health.body)")
    }
}
