public import Foundation

/// A child executable of this package, run by a test that reads what it
/// says line by line and may kill it with SIGKILL at a known point (the
/// import crash test's `ImportChild`, the lease test's `PGImportChild`).
public final class ChildProcess {
    public let process = Process()
    private let output = Pipe()
    private var pending = Data()

    /// The executable `name`, built by `swift build`/`swift test` next to the test binary.
    public static func executable(_ name: String) -> URL {
        let testBinary = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        var folder = testBinary.deletingLastPathComponent()
        // On Linux the tests run from `.build/<triple>/debug/DepotPackageTests.xctest`.
        if folder.lastPathComponent.hasSuffix(".xctest") { folder.deleteLastPathComponent() }
        return folder.appendingPathComponent(name)
    }

    public init(_ name: String, arguments: [String]) throws {
        process.executableURL = Self.executable(name)
        process.arguments = arguments
        process.standardOutput = output
        try process.runClosingFiles()
    }

    /// The next line the child wrote; `nil` when it closed its output.
    public func nextLine() -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData  // blocks until data or EOF
            if chunk.isEmpty { return nil }
            pending.append(chunk)
        }
    }

    /// Runs `executable ARGS` to its end: its exit status (``Foundation/Process/waitForExit()``),
    /// standard output and standard error. Standard error goes through a
    /// file, so that a child that writes much of it never waits on a full
    /// pipe while its output is read.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, out: String, err: String)
    {
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments
        if let environment { p.environment = environment }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = try FileHandle(forWritingTo: errors)
        p.standardInput = FileHandle.nullDevice
        try p.runClosingFiles()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let status = p.waitForExit()
        let complained = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        return (status, said, complained)
    }

    public func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }
}

/// Writes `text` and a newline to standard output at once, unbuffered, so
/// that a parent reading line by line sees it before the child goes on
/// (and before a SIGKILL).
public func say(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { buf in
        var done = 0
        while done < buf.count {
            let n = write(1, buf.baseAddress! + done, buf.count - done)
            if n <= 0 { exit(3) }
            done += n
        }
    }
}

extension Process {
    /// Waits for the child to end; its exit status, or the number of the
    /// signal that ended it (what `terminationStatus` says).
    ///
    /// Asks the kernel (`waitid` with `WNOWAIT`, which leaves the child for
    /// Foundation to reap) rather than `waitUntilExit`: Foundation learns of
    /// a child's end from a socket the child inherits, and once in a whole
    /// suite's run `waitUntilExit` spun for ever over a `depotctl --help`
    /// that had ended long before (a zombie nobody reaped).
    @discardableResult
    public func waitForExit() -> Int32 { ended().status }

    /// How the child ended (``waitForExit()``), waiting for it if it has not.
    public var exitStatus: Int32 { ended().status }

    /// Whether a signal ended the child (``waitForExit()``), waiting for it if it has not.
    public var endedBySignal: Bool { ended().bySignal }

    private func ended() -> (status: Int32, bySignal: Bool) {
        var info = siginfo_t()
        while true {
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == 0 {
                return (info._sifields._sigchld.si_status, info.si_code != CLD_EXITED)
            }
            if errno == EINTR { continue }
            // ECHILD: Foundation reaped it already, and knows how it ended.
            waitUntilExit()
            return (terminationStatus, terminationReason == .uncaughtSignal)
        }
    }
}

extension Process {
    /// Runs the child, then closes this process's copies of the files given
    /// as its standard input, output and error (the child has its own; a
    /// `Pipe`'s ends are Foundation's to close, and the shared null device
    /// and this process's own 0, 1, 2 stay open).
    ///
    /// Foundation keeps a child's `Process`, and so the handles given to it,
    /// for a long while: a whole suite's run held 1,435 descriptors, most of
    /// them deleted output files of children, and with about 1,300 open
    /// `Process.run` itself can crash, over-reading the names it lists in
    /// /proc/self/fd (swift-corelibs-foundation #5472).
    public func runClosingFiles() throws {
        try run()
        for case let handle as FileHandle in [standardInput, standardOutput, standardError]
        where handle !== FileHandle.nullDevice && handle.fileDescriptor > 2 {
            try? handle.close()
        }
    }
}
