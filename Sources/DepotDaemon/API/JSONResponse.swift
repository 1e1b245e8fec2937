import AsyncAlgorithms
import DepotWire
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A value a stream takes once and then no longer holds.
final class HandOver<Value: Sendable>: Sendable {
    private let value: Mutex<Value?>
    init(_ value: Value?) { self.value = Mutex(value) }
    func take() -> Value? {
        value.withLock { v in
            defer { v = nil }; return v
        }
    }
}

enum JSONResponse {
    static func make(_ json: String, status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBuffer()
        buffer.writeString(json)
        buffer.writeString("\n")
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }

    /// JSON written by hand (a batch's records as the store wrote them).
    static func raw(_ bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBuffer()
        buffer.writeBytes(bytes)
        buffer.writeString("\n")
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }

    static func encode<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        make(String(decoding: try encoder.encode(value), as: UTF8.self), status: status)
    }

    static var encoder: JSONEncoder { WireJSON.encoder }

    /// An NDJSON stream, one line per element, flushed as each is written.
    ///
    /// A client that hangs up ends the stream at once: `lines` runs in a
    /// child task, cancelled when the connection's ``HangUpWatcher`` says
    /// the client closed its end, so that a live fetch or a follower does
    /// not linger, holding a task and reading the store at each commit,
    /// until its next write fails. Lines pass through a channel that holds
    /// one at a time: a slow client slows `lines` down (and a live fetch
    /// coalesces the commits meanwhile) rather than filling memory.
    ///
    /// `head`, when given, goes out first, as it is (a line shared by
    /// several streams, ``LiveStarts``), and is not held after.
    static func stream(
        _ context: some ConnectionContext, head: ByteBuffer? = nil, deadline: StreamDeadline,
        metrics: Metrics,
        _ lines: @escaping @Sendable (_ write: (String) async throws -> Void) async throws -> Void
    ) -> Response {
        let channel = context.channel
        let head = HandOver(head)
        return Response(
            status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-cache"],
            body: ResponseBody { base in
                var writer = deadline.writer(base)
                metrics.streamOpened()
                defer { metrics.streamClosed() }
                if let head = head.take() { try await writer.write(head) }
                let watcher = try? await channel.pipeline.handler(type: HangUpWatcher.self).get()
                let handoff = AsyncThrowingChannel<String, any Error>()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        do {
                            try await lines { line in
                                await handoff.send(line)
                                try Task.checkCancellation()
                            }
                            handoff.finish()
                        } catch {
                            handoff.fail(error)
                        }
                    }
                    if let watcher {
                        group.addTask {
                            await watcher.wait()
                            handoff.fail(CancellationError())
                        }
                    }
                    for try await line in handoff {
                        var buffer = ByteBuffer()
                        buffer.writeString(line)
                        buffer.writeString("\n")
                        try await writer.write(buffer)
                    }
                    group.cancelAll()
                }
                try await writer.finish(nil)
            })
    }
}
