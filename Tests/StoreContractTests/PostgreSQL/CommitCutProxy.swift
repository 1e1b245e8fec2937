import Foundation

/// A relay between PostgreSQL clients and the server's Unix socket that,
/// once armed, cuts the next connection that sends a `COMMIT`: either after
/// the server has answered it (the save committed, the client never hears
/// so: a backend ended or a network cut at the worst moment), or before the
/// server reads it (the save rolls back). Each arming cuts one connection.
///
/// Connect to it with the server's location, its socket folder replaced by
/// ``folder``.
final class CommitCutProxy: @unchecked Sendable {
    enum Cut { case afterTheServerAnswers, beforeTheServerReads }

    /// The folder of the relay's socket (`.s.PGSQL.PORT`).
    let folder: String
    private let listener: Int32
    private let lock = NSLock()
    private var armed: Cut?
    private var cutCount = 0
    private var refusals = 0
    private var refusedCount = 0

    /// Connections cut so far.
    var cuts: Int { lock.withLock { cutCount } }
    /// Connections closed at once so far (``refuse(_:)``).
    var refused: Int { lock.withLock { refusedCount } }

    /// Listens at once: a client may connect when this returns.
    init(upstreamFolder: String, port: Int) throws {
        folder =
            FileManager.default.temporaryDirectory.appendingPathComponent("cut-\(UUID().uuidString.prefix(8))")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let upstream = upstreamFolder + "/.s.PGSQL.\(port)"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.address(folder + "/.s.PGSQL.\(port)")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw CocoaError(.fileWriteUnknown)
        }
        self.listener = listener
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }  // closed by stop()
                let refuse = self.lock.withLock {
                    guard self.refusals > 0 else { return false }
                    self.refusals -= 1
                    self.refusedCount += 1
                    return true
                }
                if refuse {
                    // The server unreachable: the connection closed unread.
                    close(client)
                    continue
                }
                let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                var to = Self.address(upstream)
                let connected = withUnsafePointer(to: &to) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
                guard connected == 0 else {
                    close(client)
                    close(server)
                    continue
                }
                relay(client: client, server: server)
            }
        }
    }

    /// Cuts the next connection that sends a `COMMIT`, as `cut` says.
    func arm(_ cut: Cut) { lock.withLock { armed = cut } }

    /// Closes the next `count` connections at once, as a server that is
    /// restarting would refuse them.
    func refuse(_ count: Int) { lock.withLock { refusals = count } }

    /// Stops listening; relayed connections run on until their ends close.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        try? FileManager.default.removeItem(atPath: folder)
    }

    private static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        return address
    }

    /// One client's connection: a thread each way.
    private final class Pair: @unchecked Sendable {
        let client: Int32, server: Int32
        let lock = NSLock()
        var cutOnReply = false
        var open = 2
        init(client: Int32, server: Int32) { (self.client, self.server) = (client, server) }

        /// Ends both directions; the last thread out closes the descriptors.
        func end() {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
        }

        func leave() {
            let last = lock.withLock {
                open -= 1
                return open == 0
            }
            if last {
                close(client)
                close(server)
            }
        }
    }

    /// The statement `COMMIT` as the extended protocol's Parse message
    /// carries it (an unnamed statement, then the text and its NUL).
    private static let commit = Array("\0COMMIT\0".utf8)

    private func relay(client: Int32, server: Int32) {
        let pair = Pair(client: client, server: server)
        Thread.detachNewThread { [self] in
            defer { pair.leave() }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
                guard n > 0 else { return pair.end() }
                let chunk = buffer[0..<n]
                let sendsCommit = Self.contains(chunk, Self.commit)
                if sendsCommit, let cut = take() {
                    if cut == .beforeTheServerReads { return pair.end() }
                    pair.lock.withLock { pair.cutOnReply = true }
                }
                guard Self.write(server, chunk) else { return pair.end() }
            }
        }
        Thread.detachNewThread {
            defer { pair.leave() }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(server, $0.baseAddress, $0.count) }
                guard n > 0 else { return pair.end() }
                // The server's answer to the COMMIT: it committed; the
                // client never hears it.
                if pair.lock.withLock({ pair.cutOnReply }) { return pair.end() }
                guard Self.write(client, buffer[0..<n]) else { return pair.end() }
            }
        }
    }

    /// Disarms, counting the cut; what was armed.
    private func take() -> Cut? {
        lock.withLock {
            defer { armed = nil }
            if armed != nil { cutCount += 1 }
            return armed
        }
    }

    private static func contains(_ chunk: ArraySlice<UInt8>, _ needle: [UInt8]) -> Bool {
        guard chunk.count >= needle.count else { return false }
        return (chunk.startIndex...(chunk.endIndex - needle.count)).contains { start in
            chunk[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// Writes all of `bytes`; false once the other end has gone (no
    /// SIGPIPE: send's MSG_NOSIGNAL).
    private static func write(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }
}
