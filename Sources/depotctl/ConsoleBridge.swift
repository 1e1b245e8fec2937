import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `depotctl console`'s bridge (DESIGN §19): an HTTP listener on the
/// loopback that forwards each request to depotd's socket, from this
/// process, so that the daemon sees the user who ran it (`SO_PEERCRED`) and
/// applies their role; the daemon itself opens no listener.
///
/// Who it serves: only connections whose peer is the user who runs it (or
/// root), read from the kernel's table of loopback sockets as identd does
/// (``LoopbackPeer``); any other user's connection is closed as soon as it
/// is accepted, so a stolen token or session is worth nothing to them, and
/// a flood of their connections holds nothing open (issue 51).
///
/// What it lets through: only `Host` values of the loopback at its port (a
/// page of another site whose name resolves to 127.0.0.1 sends its own);
/// for `/v1/…` and anything that is not a GET or HEAD of the console's own
/// files, only requests carrying the session in the `X-Depot-Session`
/// header, which the one-time token of the printed URL is exchanged for.
/// The page keeps the session for its origin alone (`localStorage`: the
/// bridge's port) and sends it as that header: no cookie, which a browser would send to every port of
/// 127.0.0.1, another user's server among them. For every request that is
/// not a GET or HEAD, only a same-origin `Origin` (or, without one,
/// `Sec-Fetch-Site: same-origin`). Only `/console/…` and `/v1/…` are
/// forwarded. Each request goes to the daemon on a connection of its own,
/// streamed both ways (an upload, a live stream), and the session does not.
/// A connection idle for ``idleTimeout`` between requests is closed, and so
/// is one whose request says `Connection: close`; at most
/// ``maxConnections`` are served at once.
final class ConsoleBridge: Sendable {
    let socketPath: String
    /// The one-time token of the printed URL.
    let token: String
    /// The session the token is exchanged for, sent by the page as a header.
    let session: String
    private let tokenUsed = Mutex(false)
    /// Connections being served.
    private let open = Mutex(0)
    /// What runs when the token has been exchanged (`--open` removes its file).
    let onExchange = Mutex<(@Sendable () -> Void)?>(nil)
    static let sessionHeader = "X-Depot-Session"
    static let maxConnections = 256
    static let idleTimeout = TimeAmount.seconds(30)

    init(socketPath: String) {
        self.socketPath = socketPath
        token = Self.random()
        session = Self.random()
    }

    /// 32 random bytes as hex, from the system's generator.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Binds `127.0.0.1:port` (0: a free port); the port bound.
    func start(port: Int) async throws -> (port: Int, serve: @Sendable () async throws -> Void) {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandlers([
                        IdleStateHandler(readTimeout: Self.idleTimeout), IdleBetweenRequests()
                    ])
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        let bound = server.channel.localAddress?.port ?? port
        return (
            bound,
            {
                try await withThrowingDiscardingTaskGroup { group in
                    try await server.executeThenClose { connections in
                        for try await connection in connections {
                            group.addTask { await self.serve(connection, port: bound) }
                        }
                    }
                }
            }
        )
    }

    /// One browser connection: its requests one after the other, if its
    /// peer is this user's (or root's) and fewer than ``maxConnections``
    /// are served; else it is closed at once, unread.
    func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, port: Int) async {
        let admitted = open.withLock { count -> Bool in
            guard count < Self.maxConnections else { return false }
            count += 1
            return true
        }
        defer { if admitted { open.withLock { $0 -= 1 } } }
        guard admitted, LoopbackPeer.isOwner(of: connection.channel) else {
            try? await connection.channel.close()
            return
        }
        try? await connection.executeThenClose { inbound, outbound in
            var requests = inbound.makeAsyncIterator()
            while let part = try await requests.next() {
                guard case .head(let head) = part else { continue }
                switch decide(head, port: port) {
                case .refuse(let status, let message):
                    try await Self.skipBody(&requests)
                    try await Self.answer(outbound, head, status, message)
                case .exchange:
                    try await Self.skipBody(&requests)
                    // The session goes to the page in the fragment, which
                    // the browser keeps to itself: never sent, never logged.
                    var headers = HTTPHeaders([
                        ("Location", "/console/#session=\(session)"), ("Content-Length", "0")
                    ])
                    headers.add(name: "Cache-Control", value: "no-store")
                    headers.add(name: "Referrer-Policy", value: "no-referrer")
                    try await outbound.write(contentsOf: [
                        .head(HTTPResponseHead(version: head.version, status: .seeOther, headers: headers)),
                        .end(nil)
                    ])
                    onExchange.withLock { $0 }?()
                case .redirect(let location):
                    try await Self.skipBody(&requests)
                    let headers = HTTPHeaders([("Location", location), ("Content-Length", "0")])
                    try await outbound.write(contentsOf: [
                        .head(HTTPResponseHead(version: head.version, status: .seeOther, headers: headers)),
                        .end(nil)
                    ])
                case .forward:
                    guard try await forward(head, &requests, outbound, browser: connection.channel) else { return }
                }
                // `Connection: close` (or HTTP/1.0 without keep-alive): answered, closed.
                if !head.isKeepAlive { return }
            }
        }
    }

    enum Decision: Equatable {
        case refuse(HTTPResponseStatus, String)
        case exchange
        case redirect(String)
        case forward
    }

    /// What to do with a request, by its head alone.
    func decide(_ head: HTTPRequestHead, port: Int) -> Decision {
        let hosts = ["127.0.0.1:\(port)", "localhost:\(port)"]
        guard let host = head.headers["Host"].first?.lowercased(), hosts.contains(host) else {
            return .refuse(
                .forbidden,
                "the console answers only at http://127.0.0.1:\(port)/ (this request named the host "
                    + "\(head.headers["Host"].first.map { "\"\($0)\"" } ?? "nothing"))")
        }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let query = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
        if let given = Self.parameter("token", in: query) {
            let fresh = tokenUsed.withLock { used -> Bool in
                guard !used, Self.same(given, token) else { return false }
                used = true
                return true
            }
            if fresh { return .exchange }
            return .refuse(
                .forbidden,
                "this console link was used already, or is not this bridge's: run depotctl console again "
                    + "for a new one")
        }
        // The console's own files are the same for everyone: a page loads
        // them without the session (a navigation sends no header of ours).
        // Only a plain file name counts as one: no further slash, dot
        // segment or escape, so no spelling of a path reaches anything else
        // of the daemon without the session, whatever the daemon's router
        // makes of it.
        let asset = (head.method == .GET || head.method == .HEAD) && Self.isAsset(path)
        if !asset {
            guard let given = head.headers[Self.sessionHeader].first, Self.same(given, session) else {
                return .refuse(
                    .unauthorized,
                    "open the console with the URL depotctl console printed (its token is good once, in one browser)")
            }
        }
        if head.method != .GET && head.method != .HEAD {
            let origins = hosts.map { "http://" + $0 }
            if let origin = head.headers["Origin"].first {
                guard origins.contains(origin.lowercased()) else {
                    return .refuse(.forbidden, "a request from another origin (\(origin)) is refused")
                }
            } else if head.headers["Sec-Fetch-Site"].first != "same-origin" {
                return .refuse(
                    .forbidden, "a request that changes something must come from the console's own page (Origin)")
            }
        }
        if path == "/" || path == "/console" { return .redirect("/console/") }
        guard path.hasPrefix("/console/") || path.hasPrefix("/v1/") else {
            return .refuse(.notFound, "the console bridge forwards only /console/ and /v1/")
        }
        return .forward
    }

    /// The request to the daemon and its answer back; false when the
    /// browser's connection cannot go on (the daemon broke off mid-answer).
    func forward(
        _ head: HTTPRequestHead,
        _ requests: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator,
        _ outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, browser: any Channel
    ) async throws -> Bool {
        let daemon: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            daemon = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                            wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            try await Self.skipBody(&requests)
            try await Self.answer(
                outbound, head, .badGateway, "depotd does not answer at \(socketPath): \(error)", code: "unavailable")
            return true
        }
        // A browser that goes away (a page left, a stream aborted) ends the
        // daemon's side at once, not at the stream's next line.
        let daemonChannel = daemon.channel
        browser.closeFuture.whenComplete { _ in daemonChannel.close(promise: nil) }
        return try await daemon.executeThenClose { answers, _ in
            var forwarded = head
            forwarded.headers.remove(name: Self.sessionHeader)
            forwarded.headers.remove(name: "Cookie")
            forwarded.headers.replaceOrAdd(name: "Host", value: "depot")
            forwarded.headers.replaceOrAdd(name: "Connection", value: "close")
            // The body as it comes; a daemon that answers before reading it
            // all (a refusal) has its answer read all the same. Written on
            // the channel, each part's write awaited, not through the
            // NIOAsyncChannel's writer: the daemon answers a GET and closes
            // as soon as it has the head, and a write of the writer made
            // after that close waited forever (swift-nio 2.101; seen about
            // once in 300 requests of a loaded machine, as a page that never
            // loaded). A channel's write to a closed channel fails instead.
            var ended = false
            do {
                try await daemonChannel.writeAndFlush(HTTPClientRequestPart.head(forwarded)).get()
                while !ended, let part = try await requests.next() {
                    switch part {
                    case .head: break
                    case .body(let bytes):
                        try await daemonChannel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(bytes))).get()
                    case .end(let trailers):
                        ended = true
                        try await daemonChannel.writeAndFlush(HTTPClientRequestPart.end(trailers)).get()
                    }
                }
            } catch {
                // The rest of this request's body, not the next request's.
                if !ended { try? await Self.skipBody(&requests) }
            }
            var answered = false
            for try await part in answers {
                switch part {
                case .head(var answer):
                    answer.headers.remove(name: "Connection")
                    answer.version = head.version
                    try await outbound.write(.head(answer))
                case .body(let bytes): try await outbound.write(.body(.byteBuffer(bytes)))
                case .end(let trailers):
                    try await outbound.write(.end(trailers))
                    answered = true
                }
                if answered { break }
            }
            return answered
        }
    }

    /// The rest of a request's body, dropped.
    static func skipBody(
        _ requests: inout NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator
    ) async throws {
        while let part = try await requests.next() {
            if case .end = part { return }
        }
    }

    /// An answer of the bridge's own, as the daemon's errors look.
    static func answer(
        _ outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, _ request: HTTPRequestHead,
        _ status: HTTPResponseStatus, _ message: String, code: String = "forbidden"
    ) async throws {
        // Encoded, not written by hand: a message quotes what the request
        // sent (its Host, its Origin).
        let json = (try? JSONEncoder().encode(["error": ["code": code, "message": message]])) ?? Data("{}".utf8)
        let body = ByteBuffer(bytes: Array(json) + [UInt8(ascii: "\n")])
        let headers = HTTPHeaders([
            ("Content-Type", "application/json"), ("Content-Length", "\(body.readableBytes)"),
            ("Cache-Control", "no-store")
        ])
        try await outbound.write(contentsOf: [
            .head(HTTPResponseHead(version: request.version, status: status, headers: headers)),
            .body(.byteBuffer(body)), .end(nil)
        ])
    }

    /// `/console`, `/console/` or `/console/NAME`, NAME of letters, digits,
    /// `-`, `_` and dots, and not `.` or `..`.
    static func isAsset(_ path: String) -> Bool {
        if path == "/console" || path == "/console/" { return true }
        guard path.hasPrefix("/console/") else { return false }
        let name = path.dropFirst("/console/".count)
        return name != "." && name != ".."
            && name.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D
                    || c == 0x5F || c == 0x2E
            }
    }

    static func parameter(_ name: String, in query: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.first == Substring(name) { return parts.count > 1 ? String(parts[1]) : "" }
        }
        return nil
    }

    /// Equal, in a time that does not tell how much of it matched.
    static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Closes a connection of the bridge that has been idle, between requests,
/// for the ``IdleStateHandler``'s read timeout; one whose answer is still
/// being sent (a live stream) stays however long it lasts.
final class IdleBetweenRequests: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Requests read whose answers have not ended.
    private var pending = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { pending += 1 }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { pending = max(0, pending - 1) }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            if pending == 0 { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
