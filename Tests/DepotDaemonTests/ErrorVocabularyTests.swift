import DepotDaemon
import DepotEngine
import DepotWire
import Foundation
import Testing

/// The daemon's one error vocabulary (issue 10, item 2): codes with one
/// status each, documented; engine errors keep their codes; what is not the
/// client's to know stays in the log; log messages are constants.
@Suite("One error vocabulary")
struct ErrorVocabularyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test("docs/api.md lists every code with the status the daemon answers it with")
    func documented() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/api.md"), encoding: .utf8)
        var documented: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let status = Int(cells[1]) else { continue }
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = status
        }
        for code in APIError.Code.allCases {
            #expect(documented[code.rawValue] == Int(APIError(code, "").statusCode), "\(code.rawValue)")
        }
        #expect(documented.count == APIError.Code.allCases.count)
    }

    @Test("every engine error keeps its code; SQLite's failures become internal, without their text")
    func engineCodes() {
        for code in DepotError.Code.all {
            let answer = APIError.answer(to: DepotError(code, "disk I/O error (errno 5) at page 17", position: 3))
            if code == .database {
                #expect(answer.code == .internal)
                #expect(!answer.message.contains("errno"))
            } else {
                #expect(answer.code.rawValue == code.description)
                #expect(answer.position == 3)
            }
        }
        struct Strange: Error {}
        #expect(APIError.answer(to: Strange()).code == .internal)
    }

    /// Issue #30, item 6: a file that cannot be read is an I/O error with
    /// its cause, not an invalid argument; a path that names no file stays
    /// the caller's mistake; the job layer refuses without HTTP.
    @Test(
        "an unreadable file is io with its POSIX cause; a missing one invalid_argument; job refusals keep their codes")
    func ioAndRefusals() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("depot-io-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A socket is a file that open(2) refuses (ENXIO), whoever asks.
        let socket = folder.appendingPathComponent("s.sock").path
        let fd = Foundation.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in socket.utf8.enumerated() { buffer[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0)
        let unreadable = #expect(throws: DepotError.self) { try SafeFile.openForReading(socket) }
        #expect(unreadable?.code == .io)
        #expect((unreadable?.cause as? POSIXError)?.code == .ENXIO)
        #expect(unreadable?.message.contains(socket) == true)
        let answer = APIError.answer(to: unreadable!)
        #expect(answer.code == .io && answer.statusCode == 500)

        let missing = #expect(throws: DepotError.self) { try SafeFile.openForReading(folder.path + "/nope.csv") }
        #expect(missing?.code == .invalidArgument && missing?.cause == nil)
        // The cause is not part of equality: the same report with or without it.
        #expect(
            DepotError.io("cannot read x", errno: EIO)
                == DepotError(.io, "cannot read x: \(String(cString: strerror(EIO)))"))

        for (refusal, code) in [
            (JobRefusal.stopping, APIError.Code.storeClosed), (.unknownJob("j1"), .unknownJob),
            (.unknownStore("travle", open: ["travel"]), .unknownStore)
        ] {
            let answer = APIError.answer(to: refusal)
            #expect(answer.code == code && answer.message == refusal.description)
        }
        #expect(JobRefusal.unknownStore("travle", open: ["travel"]).description.contains("did you mean \"travel\""))
    }

    @Test("log messages are constants; their data goes in metadata (the journal's fields)")
    func constantLogMessages() throws {
        // A logger call whose message is not one string literal without
        // interpolation: logger.info("job \(id) ..."), logger.error(text).
        let call = try Regex(
            #"logger\.(?:trace|debug|info|notice|warning|error|critical|log\(level:[^,]+,)\(?\s*([^)]*)"#,
            as: (Substring, Substring).self)
        var offenders: [String] = []
        var calls = 0
        for folder in ["Sources/DepotDaemon", "Sources/depotd"] {
            let base = Self.root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                // The message may stand on the line after the call's opening
                // parenthesis (as swift-format breaks a long call).
                for match in text.matches(of: call) {
                    calls += 1
                    let argument = String(match.output.1)
                    let literal = argument.hasPrefix("\"") && !argument.hasPrefix("\"\\(")
                    if !literal || argument.prefix(while: { $0 != "," }).contains("\\(") {
                        let number = text[..<match.range.lowerBound].filter { $0 == "\n" }.count + 1
                        let line = text[match.range].prefix { $0 != "\n" }
                        offenders.append("\(folder)/\(file):\(number): \(line)")
                    }
                }
            }
        }
        #expect(calls > 10)
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }

    @Test("a live daemon: the codes on the wire, 405 with Allow, and io for an export whose output went missing")
    func onTheWire() throws {
        let d = try DaemonProcess()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let unknownRoute = try d.request("GET", "/v1/nothing")
        #expect(unknownRoute.status == 404)
        #expect((unknownRoute.object["error"] as? [String: Any])?["code"] as? String == "not_found")
        // A known path with a method it does not take: 405 with Allow.
        for (method, path, allow) in [
            ("TRACE", "/v1/health", "GET"), ("PUT", "/v1/jobs", "POST, GET"),
            ("QUERY", "/v1/stores/travel/history", "GET, DELETE"),
            ("GET", "/v1/stores/travel/entities/Trip/fetch", "POST")
        ] {
            let refused = try d.request(method, path)
            #expect(refused.status == 405, "\(method) \(path)")
            #expect(refused.headers["allow"] == allow, "\(method) \(path)")
            #expect((refused.object["error"] as? [String: Any])?["code"] as? String == "method_not_allowed")
        }
        #expect(try d.request("TRACE", "/v1/nothing").status == 404)
        let unknownStore = try d.request("GET", "/v1/stores/nope")
        #expect((unknownStore.object["error"] as? [String: Any])?["code"] as? String == "unknown_store")
        let unknownJob = try d.request("GET", "/v1/jobs/jnope")
        #expect(unknownJob.status == 404)
        #expect((unknownJob.object["error"] as? [String: Any])?["code"] as? String == "unknown_job")

        let output = d.folder.appendingPathComponent("inbox/out.csv").path
        let accepted = try d.request(
            "POST", "/v1/jobs",
            body: #"{"kind":"export","store":"travel","entity":"Trip","format":"csv","path":"\#(output)"}"#)
        let id = accepted.object["id"] as? String ?? ""
        #expect(try d.jobEnded(id)["state"] as? String == "succeeded")
        #expect(try d.request("GET", "/v1/jobs/\(id)/output").status == 200)
        try FileManager.default.removeItem(atPath: output)
        let missing = try d.request("GET", "/v1/jobs/\(id)/output")
        #expect(missing.status == 500)
        let error = missing.object["error"] as? [String: Any]
        #expect(error?["code"] as? String == "io")
        #expect((error?["message"] as? String)?.contains("No such file") == false)
        #expect(d.log.contains("an export's output cannot be read"))
        #expect(try d.request("GET", "/v1/health").status == 200)
    }
}
