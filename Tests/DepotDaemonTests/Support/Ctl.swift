import ChildProcessSupport
import Foundation

/// Runs the built `depotctl` as a subprocess, the way a person or a script does.
enum Ctl {
    static var executable: URL {
        DaemonProcess.products.appendingPathComponent("depotctl")
    }

    struct Result {
        var status: Int32
        var out: String
        var err: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(out.utf8))) as? [String: Any] ?? [:] }
        var lines: [String] { out.split(separator: "\n").map(String.init) }
    }

    /// Runs `depotctl ARGS` to its end, with `DEPOT_SOCKET` naming the daemon's socket.
    /// With `stdin`, that text is its standard input (else nothing).
    static func run(_ args: [String], socket: String?, environment: [String: String] = [:], stdin: String? = nil)
        throws -> Result
    {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ctl-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outPath = folder.appendingPathComponent("out").path, errPath = folder.appendingPathComponent("err").path
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let p = Process()
        p.executableURL = executable
        p.arguments = args
        p.environment = env(socket: socket, environment)
        p.standardOutput = FileHandle(forWritingAtPath: outPath)
        p.standardError = FileHandle(forWritingAtPath: errPath)
        if let stdin {
            let inPath = folder.appendingPathComponent("in").path
            _ = FileManager.default.createFile(atPath: inPath, contents: Data(stdin.utf8))
            p.standardInput = FileHandle(forReadingAtPath: inPath)
        } else {
            p.standardInput = FileHandle.nullDevice
        }
        try p.runClosingFiles()
        p.waitForExit()
        return Result(
            status: p.exitStatus,
            out: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            err: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// Runs `depotctl ARGS` under a pseudo-terminal (`script -qec`), as on a
    /// person's terminal; returns what the terminal received.
    static func onTerminal(_ args: [String], socket: String, environment: [String: String] = [:]) throws -> Result {
        let command = ([executable.path] + args).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            .joined(separator: " ")
        var env = environment
        env["COLUMNS"] = env["COLUMNS"] ?? "120"
        return try run(
            ["-qec", "stty cols \(env["COLUMNS"]!) 2>/dev/null; " + command, "/dev/null"], socket: socket,
            environment: env,
            program: URL(fileURLWithPath: "/usr/bin/script"))
    }

    private static func run(_ args: [String], socket: String, environment: [String: String], program: URL) throws
        -> Result
    {
        let p = Process()
        p.executableURL = program
        p.arguments = args
        p.environment = env(socket: socket, environment)
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.runClosingFiles()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitForExit()
        return Result(status: p.exitStatus, out: String(decoding: data, as: UTF8.self), err: "")
    }

    private static func env(socket: String?, _ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "NO_COLOR")
        env["DEPOT_SOCKET"] = socket ?? "/nonexistent/depot.sock"
        env["COLUMNS"] = "80"
        env["TZ"] = "UTC"
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// A live command (`follow`, `fetch --watch`, `history --follow`): reads
    /// its output line by line; `step` sees each line and says whether to go
    /// on; then Ctrl-C (SIGINT). Returns the lines and the exit status.
    static func live(_ args: [String], socket: String, step: (String) throws -> Bool) throws -> (
        lines: [String], status: Int32
    ) {
        let p = Process()
        p.executableURL = executable
        p.arguments = args
        p.environment = env(socket: socket, [:])
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.runClosingFiles()
        let fd = out.fileHandleForReading.fileDescriptor
        var lines: [String] = []
        var pending = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        reading: while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            pending.append(contentsOf: buffer[0..<n])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                lines.append(line)
                if try !step(line) { break reading }
            }
        }
        kill(p.processIdentifier, SIGINT)
        p.waitForExit()
        return (lines, p.exitStatus)
    }
}
