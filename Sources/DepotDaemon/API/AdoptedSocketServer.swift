import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// The control API on a listening socket handed in by systemd (socket
/// activation, `LISTEN_FDS`): Hummingbird's `Application` can only bind its
/// own, so this serves the same router through NIO's `ServerBootstrap`
/// adopting the descriptor, with Hummingbird's public `HTTP1Channel`, and
/// drains connections on graceful shutdown. The socket file is systemd's:
/// it is neither unlinked at start nor at exit.
struct AdoptedSocketServer: Service {
    let descriptor: Int32
    let responder: RouterResponder<DepotRequestContext>
    let http: HTTP1Channel.Configuration
    let logger: Logger
    let onRunning: @Sendable () async -> Void

    func run() async throws {
        let responder = self.responder
        let logger = self.logger
        let http = HTTP1Channel(
            responder: { request, responseWriter, channel in
                let context = DepotRequestContext(source: .init(channel: channel, logger: logger))
                let response: Response
                do {
                    response = try await responder.respond(to: request, context: context)
                } catch {
                    response = Response(status: .internalServerError)
                }
                try await responseWriter.write(response: response.head, body: response.body)
            }, configuration: self.http)
        let group = MultiThreadedEventLoopGroup.singleton
        let quiescing = ServerQuiescingHelper(group: group)
        let server = try await ServerBootstrap(group: group)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .bind(NIOBSDSocket.Handle(descriptor)) { channel in http.setup(channel: channel, logger: logger) }
        logger.info("serving the control API on the socket systemd handed in", metadata: [LogKey.fd: "\(descriptor)"])
        await onRunning()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { tasks in
                do {
                    try await server.executeThenClose { inbound in
                        for try await child in inbound {
                            tasks.addTask { await http.handle(value: child, logger: logger) }
                        }
                    }
                } catch {
                    logger.error("the control socket failed", metadata: [LogKey.error: "\(error)"])
                }
            }
        } onGracefulShutdown: {
            quiescing.initiateShutdown(promise: nil)
        }
    }
}
