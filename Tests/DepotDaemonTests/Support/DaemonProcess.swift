import ChildProcessSupport
import DepotEngine
import Foundation
import Synchronization
import Testing

/// The folders `DaemonProcess.makeFolder()` made in this test process. Many
/// tests restart a daemon on its folder, so none is removed when a daemon
/// stops; all are removed when the process exits (a whole run used to leave
/// some fifty in /tmp). `DEPOT_TEST_KEEP=1` keeps them for a look.
private let madeFolders = Mutex<[String]>([])
private let removeFoldersAtExit: Void = {
    atexit {
        guard ProcessInfo.processInfo.environment["DEPOT_TEST_KEEP"] == nil else { return }
        for path in madeFolders.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}()

/// A `depotd` started as a child process on a temporary configuration, with
/// a datagram socket as its `NOTIFY_SOCKET`, so that tests wait for its
/// `READY=1` (and read its other systemd messages) instead of sleeping.
final class DaemonProcess {
    let folder: URL
    let process = Process()
    let notify: NotifySocket
    var socket: String { folder.appendingPathComponent("depot.sock").path }
    var configPath: String { folder.appendingPathComponent("depot.toml").path }
    let stderrPath: String

    /// The daemon executable, built next to the test binary, or the one
    /// `DEPOT_TEST_DEPOTD` names (scripts/test runs the 1M-row two-host test
    /// on the release build that the Debian package is made of).
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["DEPOT_TEST_DEPOTD"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return products.appendingPathComponent("depotd")
    }

    /// The folder of the products built with the test binary (depotctl,
    /// the fuzz targets, the examples).
    static var products: URL {
        let testBinary = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        var folder = testBinary.deletingLastPathComponent()
        if folder.lastPathComponent.hasSuffix(".xctest") { folder.deleteLastPathComponent() }
        return folder
    }

    static func makeFolder() throws -> URL {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("depotd-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        madeFolders.withLock { $0.append(folder.path) }
        _ = removeFoldersAtExit
        return folder
    }

    /// The Trip store, and whatever `extra` TOML adds (watches, access).
    static func config(saveEvery: Int = 200_000, socketMode: String = "0660", extra: String = "") -> String {
        """
        [daemon]
        state_dir = "state"
        socket = "depot.sock"
        socket_mode = "\(socketMode)"
        import_roots = ["inbox"]
        log_level = "debug"

        [[store]]
        name = "travel"
        save_every = \(saveEvery)
        save_interval = "1h"

          [[store.entity]]
          name = "Trip"
          identifier = "id"
          indexes = [["destination"]]
          preserve_on_delete = ["name"]
        \(tripFields)
        \(extra)
        """
    }

    /// The Trip entity's fields, as a TOML table under its `[[store.entity]]`.
    static let tripFields = """

            [store.entity.fields]
            id = "string"
            name = "string"
            destination = "string?"
            startDate = "date"
            endDate = "date?"
            budget = "double"
            isFavorite = "bool"
            notes = "string?"
        """

    /// Writes the configuration (first time only) and starts the daemon;
    /// returns once it sent `READY=1`.
    /// With `journalStream`, `JOURNAL_STREAM` names the daemon's stderr as
    /// systemd does when stderr is connected to the journal.
    init(
        folder: URL? = nil, config: String = DaemonProcess.config(), environment: [String: String] = [:],
        journalStream: Bool = false, openFiles: Int? = nil
    ) throws {
        self.folder = try folder ?? Self.makeFolder()
        try FileManager.default.createDirectory(
            at: self.folder.appendingPathComponent("inbox"),
            withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: self.folder.appendingPathComponent("depot.toml").path) {
            try Data(config.utf8).write(to: self.folder.appendingPathComponent("depot.toml"))
        }
        notify = try NotifySocket(
            path: self.folder.appendingPathComponent("notify-\(UUID().uuidString.prefix(6)).sock").path)
        stderrPath = self.folder.appendingPathComponent("depotd-\(UUID().uuidString.prefix(6)).log").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = Self.executable
        process.arguments = ["--config", self.folder.appendingPathComponent("depot.toml").path]
        if let openFiles {
            // prlimit execs the daemon: the same process, under that limit of open files.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.arguments = ["--nofile=\(openFiles):\(openFiles)", Self.executable.path] + process.arguments!
        }
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = notify.path
        env.removeValue(forKey: "JOURNAL_STREAM")
        if journalStream, let status = FileIdentity.status(atPath: stderrPath) {
            env["JOURNAL_STREAM"] = status.identity
        }
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardOutput = FileHandle.nullDevice
        try process.runClosingFiles()
        guard notify.waitFor(prefix: "READY=1", timeout: 60) != nil else {
            let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            process.terminate()
            throw DaemonError(message: "depotd did not become ready:\n\(log)")
        }
    }

    /// Whether job `id` has ended, in any state.
    func jobHasEnded(_ id: String) throws -> Bool {
        ["succeeded", "failed", "cancelled"].contains(try request("GET", "/v1/jobs/\(id)").object["state"] as? String)
    }

    /// Follows job `id`'s events to its end; its last record.
    func jobEnded(_ id: String) throws -> [String: Any] {
        let events = try UnixHTTP.stream(socket: socket, path: "/v1/jobs/\(id)/events") { line in
            let state =
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["state"] as? String
            return ["succeeded", "failed", "cancelled"].contains(state ?? "")
        }
        return (try? JSONSerialization.jsonObject(with: Data((events.last ?? "").utf8)) as? [String: Any]) ?? [:]
    }

    /// Runs `depotd --config PATH --check-config`; its exit status and stderr.
    static func checkConfig(_ path: String) throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = executable
        p.arguments = ["--config", path, "--check-config"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.runClosingFiles()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitForExit()
        return (p.exitStatus, said)
    }

    struct DaemonError: Error, CustomStringConvertible { var message: String; var description: String { message } }

    var log: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// SIGTERM, then waits for the exit.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitForExit()
        }
        return process.exitStatus
    }

    /// After a stop: what is left beside the Trip store's file (a `-wal` or
    /// `-shm`), and `sql`'s output on a copy of the file alone, as a backup
    /// made after the stop sees it.
    func storeFileAlone(_ sql: String) throws -> (leftBeside: [String], answer: String) {
        let state = folder.appendingPathComponent("state")
        let files = try FileManager.default.contentsOfDirectory(atPath: state.path)
        let copy = folder.appendingPathComponent("copy.sqlite").path
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: state.appendingPathComponent("travel.sqlite").path, toPath: copy)
        return (files.filter { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }, try JobRecordTests.sqlite(copy, sql))
    }

    /// The value of a metric without labels in `/v1/metrics`.
    func metric(_ name: String) throws -> Int? {
        try request("GET", "/v1/metrics").body.split(separator: "\n")
            .first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
    }

    /// The `depot_streams_open` gauge of `/v1/metrics`.
    func streamsOpen() throws -> Int? { try metric("depot_streams_open") }

    /// Asks the metrics until the gauge says `count`: the daemon has no
    /// event to wait on for a stream's end, so the test asks, with a deadline.
    func waitForStreams(_ count: Int) throws {
        let deadline = Date().addingTimeInterval(30)
        var seen = try streamsOpen()
        while seen != count && Date() < deadline { seen = try streamsOpen() }
        #expect(seen == count)
    }

    func request(_ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:]) throws
        -> HTTPResult
    {
        try UnixHTTP.request(
            socket: socket, method: method, path: path, body: body.map { Data($0.utf8) }, headers: headers)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitForExit()
        }
    }
}

/// A datagram socket standing in for systemd's notification socket. As
/// systemd does, it reads every message as it comes (a thread of its own),
/// so that a daemon sending many (a long import's status) never finds the
/// socket's queue full and blocks in `sd_notify`.
final class NotifySocket: @unchecked Sendable {
    let path: String
    /// What the reading thread and the waiters share.
    private final class Inbox: @unchecked Sendable {
        let condition = NSCondition()
        var lines: [String] = []
        var closed = false
    }
    private let inbox = Inbox()

    /// Every assignment received so far, in order.
    var received: [String] {
        inbox.condition.lock()
        defer { inbox.condition.unlock() }
        return inbox.lines
    }

    init(path: String) throws {
        self.path = path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard ok == 0 else {
            close(fd)
            throw DaemonProcess.DaemonError(message: "cannot bind \(path)")
        }
        let inbox = inbox
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                inbox.condition.lock()
                let closed = inbox.closed
                inbox.condition.unlock()
                if closed { break }
                // Wakes now and then to see whether the socket was closed.
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, 100) > 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { continue }
                let lines = String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n").map(String.init)
                inbox.condition.lock()
                inbox.lines += lines
                inbox.condition.broadcast()
                inbox.condition.unlock()
            }
            close(fd)
        }
    }

    deinit {
        inbox.condition.lock()
        inbox.closed = true
        inbox.condition.unlock()
    }

    /// Waits for the `count`th message starting with `prefix` (each
    /// datagram may hold several newline-separated assignments); `nil` after
    /// `timeout` seconds.
    func waitFor(prefix: String, count: Int = 1, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        inbox.condition.lock()
        defer { inbox.condition.unlock() }
        while true {
            let hits = inbox.lines.filter { $0.hasPrefix(prefix) }
            if hits.count >= count { return hits[count - 1] }
            guard inbox.condition.wait(until: deadline) else { return nil }
        }
    }
}

struct HTTPResult {
    var status: Int
    var body: String
    /// Header fields, names lowercased.
    var headers: [String: String] = [:]
    /// The trailer fields after a chunked body's last chunk, names lowercased.
    var trailers: [String: String] = [:]
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(body.utf8), options: [.fragmentsAllowed]) }
    var object: [String: Any] { json as? [String: Any] ?? [:] }
}

/// HTTP/1.1 over a Unix socket with `Connection: close`, for the tests.
enum UnixHTTP {
    static func connect(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        // A daemon that never answers fails the test after ten minutes
        // without a byte, instead of hanging the suite past CI's limit
        // (a read then ends as the peer's close would: the answer is short).
        var quiet = timeval(tv_sec: 600, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &quiet, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard ok == 0 else {
            close(fd)
            throw DaemonProcess.DaemonError(message: "cannot connect to \(path): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// Sends `data`; a peer that closed early ends the sending (MSG_NOSIGNAL:
    /// no SIGPIPE for the test process).
    static func send(_ fd: Int32, _ data: Data) {
        data.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Foundation.send(fd, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL))
                if n <= 0 { return }
                done += n
            }
        }
    }

    static func request(
        socket: String, method: String, path: String, body: Data? = nil,
        contentType: String = "application/json", headers: [String: String] = [:]
    ) throws -> HTTPResult {
        let fd = try connect(socket)
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: depot\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        send(fd, Data(head.utf8) + (body ?? Data()))
        var response = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            response.append(contentsOf: buffer[0..<n])
        }
        return parse(response)
    }

    /// A request sent by a process of another uid (setpriv, python3), its
    /// whole answer as text. The test must run as root.
    static func asUser(_ uid: Int, _ socket: String, _ method: String, _ path: String, body: String = "{}") throws
        -> String
    {
        let script = """
            import socket,sys
            s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            body=sys.argv[4].encode()
            s.sendall(("%s %s HTTP/1.1\\r\\nHost: d\\r\\nConnection: close\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n" % (sys.argv[2], sys.argv[3], len(body))).encode() + body)
            out=b""
            while True:
                b=s.recv(65536)
                if not b: break
                out+=b
            sys.stdout.write(out.decode())
            """
        return try runAs(uid, script: script, arguments: [socket, method, path, body])
    }

    /// A Python script run by a process of another uid (setpriv), with
    /// `arguments`; what it prints. The test must run as root.
    static func runAs(_ uid: Int, script: String, arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments =
            ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", script] + arguments
        let out = Pipe()
        p.standardOutput = out
        try p.runClosingFiles()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitForExit()
        return text
    }

    static func parse(_ response: Data) -> HTTPResult {
        let text = String(decoding: response, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return HTTPResult(status: 0, body: text) }
        let head = text[..<split.lowerBound]
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        var body = String(text[split.upperBound...])
        var trailers: [String: String] = [:]
        if head.lowercased().contains("transfer-encoding: chunked") {
            // After the last chunk ("0\r\n"): trailer lines, then an empty one.
            if let last = body.range(of: "\r\n0\r\n", options: .backwards)
                ?? (body.hasPrefix("0\r\n") ? body.range(of: "0\r\n") : nil)
            {
                for line in body[last.upperBound...].split(separator: "\r\n") {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    trailers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                        in: .whitespaces)
                }
            }
            body = dechunk(body)
        }
        var headers: [String: String] = [:]
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return HTTPResult(status: status, body: body, headers: headers, trailers: trailers)
    }

    /// The chunks' bytes joined, in one pass (copying the rest of the body
    /// at each chunk made a 1M-record fetch take minutes in a debug build).
    static func dechunk(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var at = 0
        while at < bytes.count {
            var lineEnd = at
            while lineEnd + 1 < bytes.count, !(bytes[lineEnd] == 13 && bytes[lineEnd + 1] == 10) { lineEnd += 1 }
            guard lineEnd + 1 < bytes.count,
                let size = Int(String(decoding: bytes[at..<lineEnd], as: UTF8.self), radix: 16), size > 0
            else { break }
            let start = lineEnd + 2
            let end = min(start + size, bytes.count)
            out.append(contentsOf: bytes[start..<end])
            at = end + 2
        }
        return String(decoding: out, as: UTF8.self)
    }
}
