import Foundation
import NIOCore

/// Counts the control socket's open connections for the metrics: added to
/// each connection's pipeline, it is removed when the connection closes.
final class ConnectionCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Never
    let metrics: Metrics

    init(metrics: Metrics) { self.metrics = metrics }

    func handlerAdded(context: ChannelHandlerContext) { metrics.connectionOpened() }
    func handlerRemoved(context: ChannelHandlerContext) { metrics.connectionClosed() }
}
