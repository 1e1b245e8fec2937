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
        try process.run()
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

    public func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
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
