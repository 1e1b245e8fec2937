import ChildProcessSupport
import Foundation
import Testing

/// A journald to log to: the system's when its socket is there, else
/// `systemd-journald` started standalone (as root), stopped afterwards.
final class Journal {
    static let daemon = "/lib/systemd/systemd-journald"
    static let socketPath = "/run/systemd/journal/socket"
    static var available: Bool {
        listening || (getuid() == 0 && FileManager.default.isExecutableFile(atPath: daemon))
    }

    /// Whether a journald listens on its socket (the file outlives a journald
    /// that was killed; connecting tells).
    static var listening: Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in socketPath.utf8.enumerated() { raw[i] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        } == 0
    }
    private var process: Process?

    init() throws {
        guard !Self.listening else { return }
        // journald says READY=1 on NOTIFY_SOCKET once it listens.
        let notify = try NotifySocket(path: "/tmp/journald-notify-\(UUID().uuidString.prefix(6)).sock")
        defer { unlink(notify.path) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.daemon)
        p.environment = ["NOTIFY_SOCKET": notify.path]
        p.standardError = FileHandle.nullDevice
        try p.runClosingFiles()
        process = p
        guard notify.waitFor(prefix: "READY=1", timeout: 30) != nil else {
            p.terminate()
            throw DaemonProcess.DaemonError(message: "systemd-journald did not become ready")
        }
    }

    /// Follows the journal's entries of `pid` as JSON until `done` says so.
    func entries(pid: Int32, timeout: Double = 30, done: ([[String: Any]]) -> Bool) throws -> [[String: Any]] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/journalctl")
        p.arguments = ["--follow", "--lines=all", "--output=json", "--no-pager", "_PID=\(pid)"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        try p.runClosingFiles()
        defer {
            // SIGKILL: the test process blocks SIGTERM, and children inherit the mask.
            kill(p.processIdentifier, SIGKILL)
            p.waitForExit()
        }
        let fd = pipe.fileHandleForReading.fileDescriptor
        var found: [[String: Any]] = []
        var pending = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            pending.append(contentsOf: buffer[0..<n])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                found.append(json(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)))
                pending.removeSubrange(pending.startIndex...newline)
            }
            if done(found) { break }
        }
        return found
    }

    deinit {
        guard let process else { return }
        process.terminate()
        process.waitForExit()
    }
}

@Suite("depotd and the journal")
struct JournalTests {
    @Test(
        "under a journal stream, log entries reach the journal with PRIORITY, STORE= and JOB_ID= fields",
        .enabled(if: Journal.available && FileManager.default.isExecutableFile(atPath: "/usr/bin/journalctl")))
    func journalFields() throws {
        let journal = try Journal()
        let d = try DaemonProcess(journalStream: true)
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let file = d.folder.appendingPathComponent("inbox/trips.csv")
        try Data(tripsCSV(10).utf8).write(to: file)
        let accepted = try d.request(
            "POST", "/v1/jobs",
            body: "{\"kind\":\"import\",\"store\":\"travel\",\"entity\":\"Trip\",\"path\":\"\(file.path)\"}")
        let id = accepted.object["id"] as? String ?? ""
        _ = try UnixHTTP.stream(socket: d.socket, path: "/v1/jobs/\(id)/events") {
            json($0)["state"] as? String == "succeeded"
        }
        // The job's end, whatever the job logged before it (at debug).
        func jobFinished(_ entry: [String: Any]) -> Bool {
            entry["JOB_ID"] as? String == id && entry["MESSAGE"] as? String == "job finished"
        }
        let entries = try journal.entries(pid: d.process.processIdentifier) { found in
            found.contains(where: jobFinished)
        }
        // Constant messages; the data is in the fields.
        let opened = entries.first { $0["MESSAGE"] as? String == "store open" }
        #expect(opened?["STORE"] as? String == "travel")
        #expect((opened?["PATH"] as? String)?.contains("travel") == true)
        #expect(opened?["PRIORITY"] as? String == "6")
        #expect(opened?["SYSLOG_IDENTIFIER"] as? String == "depotd")
        let finished = entries.first(where: jobFinished)
        #expect(finished?["MESSAGE"] as? String == "job finished")
        #expect(finished?["STATE"] as? String == "succeeded")
        #expect(finished?["STORE"] as? String == "travel")
        // Nothing went to stderr: the journal took it all.
        #expect(d.log.isEmpty)
    }
}
