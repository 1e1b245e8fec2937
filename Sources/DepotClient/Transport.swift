import Foundation
import NIOCore
package import NIOHTTP1
import NIOPosix

/// What a request sends: nothing, bytes, or a file streamed from disk.
package enum RequestBody: Sendable {
    case none
    case bytes([UInt8], contentType: String)
    case file(path: String, contentType: String)

    /// A wire type (or any JSON value) as the body.
    package static func json(_ value: any Encodable) -> RequestBody {
        .bytes(Array((try? JSONEncoder().encode(value)) ?? Data("{}".utf8)), contentType: "application/json")
    }
}

/// An error thrown by a caller's closure, carried through the exchange untouched.
private struct CallerError: Error {
    var error: any Error
}

// HTTP/1.1 to depotd over its Unix socket, one connection per request,
// through SwiftNIO's HTTP client codec: the requests every public call and
// depotctl's commands are made of.
extension DepotClient {
    /// One request; the whole answer's body. A status of 300 or more throws
    /// the daemon's error.
    package func call(
        _ method: HTTPMethod, _ uri: String, body: RequestBody = .none, headers: [(String, String)] = [],
        onHead: (HTTPResponseHead) -> Void = { _ in }
    ) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        try await exchange(method, uri, body: body, headers: headers, onHead: onHead) { chunk in
            bytes += chunk
            return true
        }
        return bytes
    }

    /// A request; its answer decoded from JSON.
    package func json<T: Decodable>(
        _ type: T.Type, _ method: HTTPMethod, _ uri: String,
        body: (any Encodable)? = nil
    ) async throws -> T {
        let bytes = try await call(method, uri, body: body.map(RequestBody.json) ?? .none)
        return try Self.decode(type, bytes, answering: "\(method) \(uri)")
    }

    /// `bytes` decoded as `T`, or an ``DepotClientError/Code/unexpectedAnswer``.
    package static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], answering request: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw DepotClientError(
                .unexpectedAnswer,
                "the daemon's answer to \(request) was not what the client expected: \(error)")
        }
    }

    /// A streamed answer, line by line (NDJSON), until `onLine` returns false
    /// or the daemon ends the stream.
    package func lines(
        _ method: HTTPMethod, _ uri: String, body: RequestBody = .none,
        onStatus: (Int) -> Void = { _ in },
        onLine: (String) async throws -> Bool
    ) async throws {
        var pending: [UInt8] = []
        try await exchange(method, uri, body: body, onStatus: onStatus) { chunk in
            pending += chunk
            // The lines of a chunk are cut out, then dropped at once: not one shift per line.
            var start = pending.startIndex
            defer { pending.removeSubrange(..<start) }
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[start..<newline], as: UTF8.self)
                start = newline + 1
                if !line.isEmpty, try await !onLine(line) { return false }
            }
            return true
        }
    }

    /// A streamed answer as it comes, chunk by chunk, until `onBody`
    /// returns false or the answer ends; returns the answer's trailers.
    /// `onStatus` hears the status as soon as the head arrives.
    ///
    /// - Throws: ``DepotClientError`` for an error status, and when the
    ///   daemon closes the connection before the answer's end (a broken
    ///   stream is not a short answer); what `onBody` throws, as it is.
    @discardableResult
    package func exchange(
        _ method: HTTPMethod, _ uri: String, body: RequestBody = .none, headers: [(String, String)] = [],
        onStatus: (Int) -> Void = { _ in }, onHead: (HTTPResponseHead) -> Void = { _ in },
        onBody: ([UInt8]) async throws -> Bool
    ) async throws -> HTTPHeaders? {
        do {
            return try await exchangeOnce(
                method, uri, body: body, headers: headers, onStatus: onStatus, onHead: onHead, onBody: onBody)
        } catch let unsent as Unsent {
            // A connection closed before a byte of the request went out
            // (the write found the channel closed, and no answer came): the
            // daemon saw no request, so it is sent once more on a new
            // connection, as HTTP clients do with a connection closed under
            // them. The suite saw this now and then on a loaded machine, on
            // fresh connections; its cause is not found (RELIABILITY.md, issue #52).
            do {
                return try await exchangeOnce(
                    method, uri, body: body, headers: headers, onStatus: onStatus, onHead: onHead, onBody: onBody)
            } catch let again as Unsent {
                throw DepotClientError(
                    .brokenAnswer,
                    "the daemon closed the connection before the request was sent, twice: \(unsent.error); "
                        + "then \(again.error)")
            }
        }
    }

    /// A request that never left: the channel was closed before its first write.
    private struct Unsent: Error {
        let error: any Error
    }

    private func exchangeOnce(
        _ method: HTTPMethod, _ uri: String, body: RequestBody, headers: [(String, String)],
        onStatus: (Int) -> Void, onHead: (HTTPResponseHead) -> Void, onBody: ([UInt8]) async throws -> Bool
    ) async throws -> HTTPHeaders? {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                            wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw Self.unreachable(socketPath, error)
        }
        return try await channel.executeThenClose { inbound, outbound -> HTTPHeaders? in
            var head = HTTPRequestHead(version: .http1_1, method: method, uri: uri)
            head.headers.add(name: "Host", value: "depot")
            head.headers.add(name: "User-Agent", value: userAgent)
            head.headers.add(name: "Connection", value: "close")
            for (name, value) in headers { head.headers.add(name: name, value: value) }
            // The daemon may answer and close the connection as soon as it has
            // read the head (a job that ended already, a refusal): a write
            // after that fails with "I/O on closed channel" although the
            // answer is there to read. So a failed write only counts when no
            // complete answer follows.
            var unsent: (any Error)?
            /// Whether nothing of the request was written (its first write failed on a closed channel).
            var nothingSent = false
            /// Whether a file's head went out (a file is written part by part).
            var headSent = false
            do {
                switch body {
                case .none:
                    head.headers.add(name: "Content-Length", value: "0")
                    try await outbound.write(contentsOf: [.head(head), .end(nil)])
                case .bytes(let bytes, let type):
                    head.headers.add(name: "Content-Type", value: type)
                    head.headers.add(name: "Content-Length", value: "\(bytes.count)")
                    try await outbound.write(contentsOf: [
                        .head(head), .body(.byteBuffer(ByteBuffer(bytes: bytes))), .end(nil)
                    ])
                case .file(let path, let type):
                    // Opened once (a link is followed, with the caller's
                    // rights), then sized from the open file itself: a size
                    // asked of the path does not follow a link, and sent as
                    // many bytes as the link's own path has (issue 51).
                    let upload = try UploadFile(path: path)
                    head.headers.add(name: "Content-Type", value: type)
                    head.headers.add(name: "Content-Length", value: "\(upload.size)")
                    // Each part written on the channel and awaited, not
                    // through the NIOAsyncChannel's writer: a write of the
                    // writer after the daemon closed (a refusal answered
                    // before the body) could wait forever (swift-nio 2.101,
                    // seen in depotctl console's bridge); the channel's fails.
                    let wire = channel.channel
                    try await wire.writeAndFlush(HTTPClientRequestPart.head(head)).get()
                    headSent = true
                    // A file that changes while it is sent is not sent whole:
                    // the connection closes before the request's end, so the
                    // daemon keeps nothing of it and no job starts.
                    while let chunk = try upload.next() {
                        try await wire.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: chunk))))
                            .get()
                    }
                    try await wire.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
                }
            } catch let error as DepotClientError {
                throw error
            } catch {
                unsent = error
                let closed = (error as? ChannelError) == .ioOnClosedChannel
                if case .file = body {
                    // Parts of a file may have gone out once its head did:
                    // never sent again. A head refused by a closed channel
                    // sent nothing (the suite's in-process infer upload met
                    // this in 4 whole runs of 5 on a loaded machine, and
                    // failed where a request of one write is sent again).
                    nothingSent = closed && !headSent
                } else if closed {
                    // One write of the whole request, refused by a closed channel.
                    nothingSent = true
                }
            }
            var status = 0
            var errorBody: [UInt8] = []
            do {
                for try await part in inbound {
                    switch part {
                    case .head(let h):
                        status = Int(h.status.code)
                        onStatus(status)
                        onHead(h)
                    case .body(let buffer):
                        if status >= 300 {
                            errorBody += buffer.readableBytesView
                        } else {
                            // What the caller throws goes out as it is.
                            do {
                                if try await !onBody(Array(buffer.readableBytesView)) { return nil }
                            } catch {
                                throw CallerError(error: error)
                            }
                        }
                    case .end(let trailers):
                        if status >= 300 { throw Self.failure(status: status, body: errorBody) }
                        return trailers
                    }
                }
            } catch let caller as CallerError {
                throw caller.error
            } catch let error as DepotClientError {
                throw error
            } catch let error as CancellationError {
                throw error
            } catch  where unsent != nil {
                // Reading failed too: the write's error says more.
            } catch {
                // The connection closed in the middle of the answer (the
                // HTTP decoder's "stream ended at an unexpected time").
                throw DepotClientError(
                    .brokenAnswer, "the daemon's answer broke off (\(error)); see its log (journalctl -u depotd)")
            }
            if status >= 300 { throw Self.failure(status: status, body: errorBody) }
            if status == 0 {
                if let unsent, nothingSent { throw Unsent(error: unsent) }
                if let unsent {
                    throw DepotClientError(
                        .brokenAnswer, "the daemon closed the connection before the request was sent: \(unsent)")
                }
                throw DepotClientError(.brokenAnswer, "the daemon closed the connection without answering")
            }
            throw DepotClientError(
                .brokenAnswer,
                "the daemon closed the connection before the end of its answer; see its log (journalctl -u depotd)")
        }
    }

    /// The daemon's `{"error": {"code", "message", "position"}}`.
    static func failure(status: Int, body: [UInt8]) -> DepotClientError {
        guard let envelope = try? JSONDecoder().decode(ErrorAnswer.self, from: Data(body)) else {
            return DepotClientError(
                .unexpectedAnswer, "the daemon answered \(status) without saying why", status: status)
        }
        var error = DepotClientError(
            .init(rawValue: envelope.error.code), envelope.error.message, status: status,
            position: envelope.error.position)
        error.changes = envelope.error.changes ?? []
        return error
    }

    static func unreachable(_ path: String, _ error: any Error) -> DepotClientError {
        let code = (error as? IOError)?.errnoCode ?? 0
        let hint =
            "start it (systemctl start depotd) or point the client at its socket (depotctl --socket, or DEPOT_SOCKET)"
        let message =
            switch code {
            case ENOENT: "no daemon at \(path): the socket does not exist; \(hint)"
            case ECONNREFUSED: "no daemon answers at \(path) (connection refused); \(hint)"
            case EACCES, EPERM:
                "cannot connect to \(path): permission denied; your user needs the socket's group "
                    + "(ls -l \(path)) or a principal in the daemon's [access]"
            default: "cannot connect to \(path): \(error); \(hint)"
            }
        return DepotClientError(.unreachable, message)
    }
}

/// A file sent as a request's body: sized from the open descriptor
/// (`fstat`), read to exactly that size, and checked to be unchanged at
/// its end, so that what the daemon receives is the file as it was opened.
final class UploadFile {
    let fd: Int32
    let path: String
    let size: Int
    private let identity: stat
    private var sent = 0

    deinit { Glibc.close(fd) }

    init(path: String) throws {
        // Without blocking: a FIFO's open waits for a writer, forever.
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            throw DepotClientError(.localIO, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw DepotClientError(.localIO, "cannot read \(path): \(String(cString: strerror(code)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            throw DepotClientError(.localIO, "cannot send \(path): it is not a regular file")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        self.path = path
        self.identity = info
        self.size = Int(info.st_size)
    }

    /// The next chunk of at most 1 MiB, or nil at the end.
    ///
    /// - Throws: ``DepotClientError/Code/localIO`` "the file changed while
    ///   it was sent" when the file ends early, grows, or its size or
    ///   modification time differ from when it was opened.
    func next() throws -> [UInt8]? {
        if sent == size {
            // One byte more would mean the file grew; and its times say
            // whether it was written in place.
            var probe: UInt8 = 0
            let extra = read(fd, &probe, 1)
            var now = stat()
            guard extra == 0, fstat(fd, &now) == 0, now.st_size == identity.st_size,
                now.st_mtim.tv_sec == identity.st_mtim.tv_sec, now.st_mtim.tv_nsec == identity.st_mtim.tv_nsec
            else { throw changed() }
            return nil
        }
        var chunk = [UInt8](repeating: 0, count: min(1 << 20, size - sent))
        var count = -1
        repeat {
            count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        } while count < 0 && errno == EINTR
        if count < 0 {
            throw DepotClientError(.localIO, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard count > 0 else { throw changed() }
        sent += count
        return count == chunk.count ? chunk : Array(chunk[..<count])
    }

    private func changed() -> DepotClientError {
        DepotClientError(
            .localIO,
            "the file changed while it was sent: \(path) is not what it was when the upload began; "
                + "nothing was imported, send it again once it is written whole")
    }
}
