import DepotEngine
import DepotWire
import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// How many connections the control socket holds (issue #35: 1,100 idle
/// connections, no role needed, used up the 1,024 files of the process, and
/// health went unanswered for a minute, with nothing logged). Each client
/// (uid) may hold `perClient` connections, all clients together `total`;
/// root and the daemon's own user have `reserve` more beyond `total` and no
/// cap of their own, so that health checks and the administrator get in.
/// A refused connection is answered `503` and closed, counted in the
/// metrics, and logged once per client until it is under its cap again.
final class ConnectionLimits: Sendable {
    let total: Int
    let perClient: Int
    static let reserve = 16
    private struct State {
        var open = 0
        var byUID: [UInt32: Int] = [:]
        /// Clients refused since they were last under their cap: logged once.
        var logged: Set<UInt32> = []
    }
    private let state = Mutex(State())
    private let ownUID = getuid()

    init(total: Int, perClient: Int) {
        self.total = total
        self.perClient = perClient
    }

    enum Verdict: Equatable {
        case admitted
        /// Refused; `log` for the first refusal of this client.
        case refused(reason: String, log: Bool)
    }

    func admit(_ uid: UInt32) -> Verdict {
        state.withLock { s in
            let privileged = uid == 0 || uid == ownUID
            let mine = s.byUID[uid, default: 0]
            var reason: String?
            if privileged {
                if s.open >= total + Self.reserve { reason = "the daemon holds its most connections (max_connections)" }
            } else if mine >= perClient {
                reason =
                    "this client (uid \(uid)) holds its most connections (max_connections_per_client, \(perClient))"
            } else if s.open >= total {
                reason = "the daemon holds its most connections (max_connections, \(total))"
            }
            if let reason {
                return .refused(reason: reason, log: s.logged.insert(uid).inserted)
            }
            s.open += 1
            s.byUID[uid] = mine + 1
            return .admitted
        }
    }

    func release(_ uid: UInt32) {
        state.withLock { s in
            s.open -= 1
            let left = s.byUID[uid, default: 1] - 1
            s.byUID[uid] = left == 0 ? nil : left
            s.logged.remove(uid)
        }
    }
}

/// Each connection's guard, after the HTTP codec: admits it under the
/// ``ConnectionLimits`` (answering `503` otherwise), and puts deadlines on
/// what the client sends: a request's head must arrive whole within
/// `idle_timeout` of the connection waiting for it (opened, or its last
/// answer sent), whatever bytes trickle in meanwhile; a body must bring at
/// least 64 KiB, or its end, in every `body_timeout` (issue #35: a body
/// trickled at a byte per 20 s was never closed, as `idle_timeout` restarts
/// on every byte). A connection past a deadline is closed, counted and logged.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    static let bodyProgress = 64 * 1024
    let limits: ConnectionLimits
    let headTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    let metrics: Metrics
    let logger: Logger
    private var uid: UInt32?
    private var asked = false
    private var admitted = false
    private var refused = false
    private var timer: Scheduled<Void>?
    private var bodyBytes = 0
    /// Requests whose head came and whose answer is not out yet (HTTP/1.1
    /// lets a client send the next before the last is answered): the head
    /// deadline starts once none is left.
    private var outstanding = 0
    /// Before the HTTP decoder: how long the request line being read is.
    private let meter = RequestLineMeter()
    /// The request head is longest a field (the request line, a header) may be.
    static let maxFieldBytes = 16 * 1024

    init(limits: ConnectionLimits, headTimeout: Duration, bodyTimeout: Duration, metrics: Metrics, logger: Logger) {
        self.limits = limits
        self.headTimeout = .nanoseconds(Int64(headTimeout / .nanoseconds(1)))
        self.bodyTimeout = .nanoseconds(Int64(bodyTimeout / .nanoseconds(1)))
        self.metrics = metrics
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        metrics.connectionOpened()
        try? context.pipeline.syncOperations.addHandler(meter, position: .first)
        if context.channel.isActive { admit(context) }
    }

    /// A request the decoder cannot read (issue 51: a request target over
    /// 16 KiB got `400` with an empty body, and one of 300 KB was neither
    /// answered nor closed for 60 s, the client blocked sending what no one
    /// read): answered at once with the reason, `414` for a long request
    /// target, `431` for long headers, `400` for the rest; then the
    /// connection reads and drops what the client still sends, so that it
    /// can read the answer, and closes once the client is done, or after
    /// 5 s.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if meter.draining { return }
        guard error is HTTPParserError || error is ByteToMessageDecoderError else {
            context.fireErrorCaught(error)
            return
        }
        meter.draining = true
        timer?.cancel()
        timer = nil
        let status: HTTPResponse.Status
        let failure: APIError
        if case .headerOverflow? = error as? HTTPParserError {
            if meter.firstLine > Self.maxFieldBytes {
                status = .uriTooLong
                failure = APIError(
                    .tooLarge,
                    "the request target is longer than \(Self.maxFieldBytes) bytes (an identifier is at most "
                        + "\(Identifier.maxTextBytes) bytes; select many records with a fetch)")
            } else {
                status = .requestHeaderFieldsTooLarge
                failure = APIError(
                    .tooLarge,
                    "the request's headers are too large (each at most \(Self.maxFieldBytes) bytes, "
                        + "64 KiB and 100 fields in all)")
            }
        } else {
            status = .badRequest
            failure = APIError(.badRequest, "the request is not HTTP/1.1 the daemon can read: \(error)")
        }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        Self.answer(context, status, failure).whenComplete { _ in
            let context = bound.value
            context.close(mode: .output, promise: nil)
            context.read()
            context.eventLoop.scheduleTask(in: .seconds(5)) { bound.value.close(promise: nil) }
        }
    }

    /// `failure` as a whole answer of `status` that closes the connection,
    /// written under the HTTP codec; done once it is written.
    static func answer(
        _ context: ChannelHandlerContext, _ status: HTTPResponse.Status, _ failure: APIError
    ) -> EventLoopFuture<Void> {
        let body = failure.body + "\n"
        var head = HTTPResponse(status: status)
        head.headerFields[.contentType] = "application/json"
        head.headerFields[.contentLength] = String(body.utf8.count)
        head.headerFields[.connection] = "close"
        context.write(NIOAny(HTTPResponsePart.head(head)), promise: nil)
        context.write(NIOAny(HTTPResponsePart.body(ByteBuffer(string: body))), promise: nil)
        return context.writeAndFlush(NIOAny(HTTPResponsePart.end(nil)))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client is done sending after a refused head: the connection ends.
        if meter.draining, case .inputClosed? = event as? ChannelEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        metrics.connectionClosed()
        timer?.cancel()
        if admitted, let uid { limits.release(uid) }
        admitted = false
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard !asked else { return }
        asked = true
        guard let provider = context.channel as? any SocketOptionProvider else {
            decide(context, uid: getuid())
            return
        }
        // Completed at once on the channel's own event loop.
        let credentials: EventLoopFuture<PeerCredentials.UCred> = provider.unsafeGetSocketOption(
            level: NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET), name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        credentials.whenComplete { result in
            let (handler, context) = bound.value
            handler.decide(context, uid: (try? result.get())?.uid ?? UInt32.max)
        }
    }

    private func decide(_ context: ChannelHandlerContext, uid: UInt32) {
        self.uid = uid
        switch limits.admit(uid) {
        case .admitted:
            admitted = true
            armHead(context)
        case .refused(let reason, let log):
            refused = true
            metrics.connectionRefused()
            if log {
                logger.warning("a connection is refused", metadata: [LogKey.uid: "\(uid)", LogKey.reason: "\(reason)"])
            }
            Self.refuse(context, reason: reason)
        }
    }

    /// A `503` written under the HTTP codec, then the close.
    static func refuse(_ context: ChannelHandlerContext, reason: String) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        answer(context, .serviceUnavailable, APIError(.tooManyConnections, reason + "; try again once some close"))
            .whenComplete { _ in bound.value.close(promise: nil) }
    }

    private func armHead(_ context: ChannelHandlerContext) {
        arm(context, what: "its request head", timeout: headTimeout, setting: "idle_timeout")
    }

    private func armBody(_ context: ChannelHandlerContext) {
        arm(context, what: "a request body", timeout: bodyTimeout, setting: "body_timeout")
    }

    private func arm(_ context: ChannelHandlerContext, what: String, timeout: TimeAmount, setting: String) {
        timer?.cancel()
        let (metrics, logger, uid) = (metrics, logger, uid)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            metrics.requestTimedOut()
            logger.notice(
                "a client sent a request too slowly; its connection is closed",
                metadata: [
                    LogKey.uid: "\(uid.map { "\($0)" } ?? "?")", LogKey.part: "\(what)", LogKey.setting: "\(setting)",
                    LogKey.timeout: "\(timeout.nanoseconds / 1_000_000_000)s"
                ])
            loopBound.value.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head:
            outstanding += 1
            bodyBytes = 0
            armBody(context)
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
            if bodyBytes >= Self.bodyProgress {
                bodyBytes = 0
                armBody(context)
            }
        case .end:
            timer?.cancel()
            timer = nil
            meter.headStarts()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            // The answer is out: the connection waits for the next head.
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            outstanding = max(0, outstanding - 1)
            context.write(data).whenComplete { result in
                let (handler, context) = loopBound.value
                if case .success = result, context.channel.isActive, handler.outstanding == 0, handler.timer == nil {
                    handler.armHead(context)
                }
                promise?.completeWith(result)
            }
            return
        }
        context.write(data, promise: promise)
    }
}

/// First in a connection's pipeline, before the HTTP decoder: measures the
/// first line of the request head being read, so that a head the decoder
/// refuses as too long is told apart as a long request target (`414`) or
/// long headers (`431`); once the answer is out, drops what the client
/// still sends and keeps reading it (``ConnectionGuard``).
///
/// The line is measured from the connection's start and from each request's
/// end (a pipelined next head read in the same bytes is measured from
/// where the decoder was; only the status of a refusal depends on it).
final class RequestLineMeter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Bytes of the head's first line so far (its end not counted).
    private(set) var firstLine = 0
    private var lineEnded = false
    /// The answer to a refused head is out: input is read and dropped.
    var draining = false

    func headStarts() {
        firstLine = 0
        lineEnded = false
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if draining { return }
        if !lineEnded {
            let buffer = unwrapInboundIn(data)
            buffer.withUnsafeReadableBytes { raw in
                if let end = raw.firstIndex(of: 0x0A) {
                    firstLine += end
                    lineEnded = true
                } else {
                    firstLine += raw.count
                }
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if draining {
            context.read()
            return
        }
        context.fireChannelReadComplete()
    }
}
