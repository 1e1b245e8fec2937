import NIOCore
import Synchronization

/// Tells a streamed answer that its client hung up.
///
/// The control socket allows half-closure (as Hummingbird's own server
/// does), so a client that closes its end does not close the channel: NIO
/// only passes `ChannelEvent.inputClosed` down the pipeline, and a stream
/// that writes nothing (a live fetch or a follower between commits, the
/// job events of a quiet daemon) would not notice until its next write
/// failed, holding a task and, at each commit, a read of the store.
/// Hummingbird's `consumeWithCancellationOnInboundClose` would do this, but
/// traps (NIO's "Deinited NIOAsyncSequenceProducer.Source without calling
/// source.finish()") when the request's body was read before, as a POST
/// fetch's is. So each connection's pipeline has one of these, after the
/// HTTP decoder, and ``JSONResponse/stream(_:metrics:_:)`` waits on it.
final class HangUpWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = Never

    private struct State {
        var hungUp = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextID = 0
    }
    private let state = Mutex(State())

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event { hangUp() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        hangUp()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { hangUp() }

    private func hangUp() {
        let waiters = state.withLock { s in
            s.hungUp = true
            defer { s.waiters = [:] }
            return s.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the client has hung up, or when the task is cancelled.
    func wait() async {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    if s.hungUp || Task.isCancelled { return true }
                    s.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
