import ChildProcessSupport
import Foundation
import Testing

/// Issue 35, item 9: connections are capped per client and in total, with
/// room kept for root and the daemon's user; request heads and bodies have
/// deadlines that trickled bytes do not push back.
@Suite("depotd: connections", .serialized, .timeLimit(.minutes(2)))
struct ConnectionTests {
    static func config() -> String {
        DaemonProcess.config(socketMode: "0666").replacingOccurrences(
            of: "[daemon]\n",
            with: """
                [daemon]
                max_connections = 30
                max_connections_per_client = 20
                idle_timeout = "3s"
                body_timeout = "2s"

                """)
    }

    /// A metric of `/v1/metrics`.
    static func metric(_ d: DaemonProcess, _ name: String) throws -> Int? {
        try d.request("GET", "/v1/metrics").body.split(separator: "\n")
            .first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
    }

    @Test(
        "a client over its cap gets 503 at once, logged once; root's health check still gets in",
        .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func perClientCap() throws {
        let d = try DaemonProcess(config: Self.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // uid 65534 (no role) opens 25 connections and holds them.
        let script = """
            import socket,sys
            socks=[]
            for i in range(25):
                s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); socks.append(s)
            codes=[]
            for s in socks:
                try: s.sendall(b"GET /v1/health HTTP/1.1\\r\\nHost: d\\r\\n\\r\\n")
                except OSError: pass
                data=b""
                while b"\\r\\n\\r\\n" not in data:
                    try: b=s.recv(65536)
                    except OSError: b=b""
                    if not b: break
                    data+=b
                codes.append(data.split(b" ")[1].decode() if data else "closed")
            print(" ".join(codes)); sys.stdout.flush()
            sys.stdin.read()
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, d.socket]
        let out = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardInput = input
        try p.runClosingFiles()
        defer { try? input.fileHandleForWriting.close(); p.waitForExit() }
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let codes = String(decoding: line, as: UTF8.self).split(separator: " ").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(codes.filter { $0 == "403" }.count == 20, "\(codes)")
        #expect(codes.filter { $0 == "503" }.count == 5, "\(codes)")
        // While all 25 are open: root is answered.
        #expect(try d.request("GET", "/v1/health").status == 200)
        #expect(try Self.metric(d, "depot_connections_refused_total") == 5)
        #expect(d.log.components(separatedBy: "a connection is refused").count - 1 == 1)
        #expect(d.log.contains("max_connections_per_client"))
    }

    /// A Python script, run as another user, that opens `count` connections
    /// to the socket (its first argument), sends a request on each at once,
    /// then reads each answer's status: `reset` for a connection reset.
    static func flood(_ count: Int) -> String {
        """
        import socket,sys,resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
        socks=[]
        for i in range(\(count)):
            s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            try: s.sendall(b"GET /v1/health HTTP/1.1\\r\\nHost: d\\r\\n\\r\\n")
            except OSError: pass
            socks.append(s)
        codes=[]
        for s in socks:
            data=b""
            try:
                while b"\\r\\n\\r\\n" not in data:
                    b=s.recv(65536)
                    if not b: break
                    data+=b
                codes.append(data.split(b" ")[1].decode() if data else "closed")
            except ConnectionResetError:
                codes.append("reset")
        print(" ".join(codes)); sys.stdout.flush()
        """
    }

    @Test(
        "a flood whose requests come with their connections: every refused one reads its 503, none is reset",
        .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func floodReads503() throws {
        let d = try DaemonProcess(config: Self.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // Issue 51: under a limit of 1,024 files a flood got ECONNRESET: a
        // refused connection was closed with its request unread, which
        // resets it, losing the 503 written before.
        let script = Self.flood(120)
        let answer = try UnixHTTP.runAs(65534, script: script, arguments: [d.socket])
        let codes = answer.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(codes.count == 120, "\(answer)")
        #expect(codes.filter { $0 == "403" }.count == 20, "\(codes)")
        #expect(codes.filter { $0 == "503" }.count == 100, "\(codes)")
        #expect(try d.request("GET", "/v1/health").status == 200)
    }

    @Test(
        "under a limit of 1,024 open files, a flood of 1,100 connections with their requests: each is answered, 403 or 503, none reset; root still gets in",
        .enabled(if: getuid() == 0, "needs root to act as another uid"))
    func floodUnderFileLimit() throws {
        let d = try DaemonProcess(config: DaemonProcess.config(socketMode: "0666"), openFiles: 1_024)
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let script = Self.flood(1_100)
        let answer = try UnixHTTP.runAs(65534, script: script, arguments: [d.socket])
        let codes = answer.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        var tally: [String: Int] = [:]
        for c in codes { tally[c, default: 0] += 1 }
        #expect(codes.count == 1_100, "\(tally)")
        #expect(Set(tally.keys).isSubset(of: ["403", "503"]), "\(tally)")
        #expect((tally["503"] ?? 0) > 0, "\(tally)")
        #expect(try d.request("GET", "/v1/health").status == 200)
    }

    /// Sends `head` then trickles `trickle` a byte at a time, one each time
    /// a second passes with no answer; the number of bytes trickled before
    /// the daemon closed the connection (`nil` if it never did in 30).
    static func trickled(_ d: DaemonProcess, head: String, trickle: String) throws -> Int? {
        let fd = try UnixHTTP.connect(d.socket)
        defer { close(fd) }
        UnixHTTP.send(fd, Data(head.utf8))
        var sent = 0
        let bytes = Array(trickle.utf8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while sent < 30 {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 1_000) > 0 {
                // An answer or the close: read to the end.
                while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
                return sent
            }
            UnixHTTP.send(fd, Data([bytes[sent % bytes.count]]))
            sent += 1
        }
        return nil
    }

    @Test("a head or a body trickled a byte a second is closed at its deadline, not kept alive by the bytes")
    func trickles() throws {
        let d = try DaemonProcess(config: Self.config())
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        // The head: within idle_timeout (3 s) of the connection's start.
        let head = try Self.trickled(
            d, head: "", trickle: "GET /v1/health HTTP/1.1\r\nX-Slow: " + String(repeating: "a", count: 100))
        #expect(head != nil && head! <= 5, "\(String(describing: head))")
        // The body: 64 KiB or its end every body_timeout (2 s).
        let body = try Self.trickled(
            d,
            head: "POST /v1/stores/travel/entities/Trip/fetch HTTP/1.1\r\nHost: d\r\nContent-Type: application/json\r\n"
                + "Content-Length: 1000\r\n\r\n", trickle: " ")
        #expect(body != nil && body! <= 4, "\(String(describing: body))")
        #expect(try Self.metric(d, "depot_requests_timed_out_total") == 2)
        #expect(d.log.contains("a client sent a request too slowly; its connection is closed PART=a request body"))
        #expect(try d.request("GET", "/v1/health").status == 200)
    }
}
