import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The write deadline of a streamed answer (issue #35): each write must be
/// taken by the client within `timeout`, or the connection is closed, which
/// fails the write and ends the stream and whatever produces it (an export
/// holding a snapshot, a live fetch). Without it, a client that asks for a
/// stream and reads nothing held the stream's producer for as long as it
/// stayed connected; `idle_timeout` does not apply to an answer in progress.
struct StreamDeadline: Sendable {
    let channel: any Channel
    let timeout: Duration
    let metrics: Metrics
    let logger: Logger

    init(_ context: some ConnectionContext, timeout: Duration, metrics: Metrics, logger: Logger) {
        self.channel = context.channel
        self.timeout = timeout
        self.metrics = metrics
        self.logger = logger
    }

    /// Runs `body` (a write), closing the connection if it has not
    /// returned within the deadline.
    func guarded<T>(_ body: () async throws -> T) async throws -> T {
        let channel = channel
        let (metrics, logger, timeout) = (metrics, logger, timeout)
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout / .nanoseconds(1)))) {
            metrics.streamTimedOut()
            logger.notice(
                "a client read nothing of a streamed answer for stream_write_timeout; its connection is closed",
                metadata: [LogKey.timeout: "\(DurationText.format(timeout))"])
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        return try await body()
    }

    /// `writer`, each of whose writes (and its end) is under the deadline.
    func writer(_ base: any ResponseBodyWriter) -> Writer { Writer(base: base, deadline: self) }

    struct Writer: ResponseBodyWriter {
        var base: any ResponseBodyWriter
        let deadline: StreamDeadline

        mutating func write(_ buffer: ByteBuffer) async throws {
            try await deadline.guarded { try await base.write(buffer) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
            let base = self.base
            try await deadline.guarded { try await base.finish(trailingHeaders) }
        }
    }
}
