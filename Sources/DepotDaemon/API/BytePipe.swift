import Dispatch
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// Hands bytes from a synchronous producer — an export writing from inside
/// a database read — to an asynchronous consumer, the response, holding at
/// most a few chunks: a slow client slows the export down instead of
/// filling memory, and a client that goes away stops it.
///
/// The producer blocks its thread (a database reader's, not one of the
/// concurrency pool's) while the chunks ahead are all unsent.
final class BytePipe: Sendable {
    private let (stream, continuation) = AsyncThrowingStream<ByteBuffer, any Error>.makeStream()
    private let space: DispatchSemaphore
    private let gone = Atomic<Bool>(false)

    /// - Parameter ahead: how many chunks may wait for the consumer.
    init(ahead: Int = 4) {
        // Made at zero and signalled up to `ahead`: libdispatch traps when a
        // semaphore is freed below the value it was made with, which is where
        // a pipe whose consumer went while it was full was left (issue #35:
        // an export read by nobody, then hung up on, killed depotd).
        space = DispatchSemaphore(value: 0)
        for _ in 0..<ahead { space.signal() }
        continuation.onTermination = { [weak self] _ in self?.stop() }
    }

    /// The pipes whose producers run now, so that depotd can stop them all
    /// as it stops: each producer reads on a connection of its own, and a
    /// store cannot copy its WAL into its file while one is open (a client
    /// that reads nothing would hold it up to `stream_write_timeout`).
    static let running = Running()

    final class Running: Sendable {
        private struct State {
            var pipes: [ObjectIdentifier: BytePipe] = [:]
            var stopped = false
        }

        private let state = Mutex(State())

        /// Counts `pipe` in; stopped at once when depotd is stopping.
        func add(_ pipe: BytePipe) {
            let stopped = state.withLock { state -> Bool in
                if !state.stopped { state.pipes[ObjectIdentifier(pipe)] = pipe }
                return state.stopped
            }
            if stopped { pipe.stop() }
        }

        func remove(_ pipe: BytePipe) {
            _ = state.withLock { $0.pipes.removeValue(forKey: ObjectIdentifier(pipe)) }
        }

        /// Stops every pipe, and each one added after: their producers
        /// throw at their next write.
        func stopAll() {
            let pipes = state.withLock { state -> [BytePipe] in
                state.stopped = true
                defer { state.pipes = [:] }
                return Array(state.pipes.values)
            }
            for pipe in pipes { pipe.stop() }
        }
    }

    /// The consumer has gone (or depotd stops): a producer waiting for room
    /// wakes up and throws.
    private func stop() {
        gone.store(true, ordering: .sequentiallyConsistent)
        space.signal()
    }

    /// Copies `bytes` into the pipe, waiting for room first.
    func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try send($0) }
    }

    /// Copies `bytes` into the pipe, waiting for room first.
    ///
    /// - Throws: `CancellationError` once the consumer has gone.
    func send(_ bytes: UnsafeRawBufferPointer) throws {
        space.wait()
        guard !gone.load(ordering: .sequentiallyConsistent) else {
            space.signal()  // for any other wait
            throw CancellationError()
        }
        continuation.yield(ByteBuffer(bytes: bytes))
    }

    /// Ends the stream, with the producer's error if it failed.
    func finish(throwing error: (any Error)? = nil) {
        continuation.finish(throwing: error)
    }

    /// Calls `body` with each chunk, in order, making room for the next.
    func drain(_ body: (ByteBuffer) async throws -> Void) async throws {
        do {
            for try await chunk in stream {
                try await body(chunk)
                space.signal()
            }
        } catch {
            stop()
            throw error
        }
    }
}

extension BytePipe {
    /// An answer streamed from a synchronous producer: `produce` writes into
    /// the pipe (from inside a database read, say) and returns the trailer
    /// fields that end the answer. Its errors break the stream off (the
    /// answer has no last chunk); check the request before, so that they
    /// are statuses. The response counts as an open stream in the metrics,
    /// unless `countsAsStream` is false (a fetch).
    static func response(
        contentType: String, trailer: String? = nil, deadline: StreamDeadline, metrics: Metrics,
        countsAsStream: Bool = true,
        _ produce: @escaping @Sendable (BytePipe) async throws -> HTTPFields
    ) -> Response {
        var headers: HTTPFields = [.contentType: contentType]
        if let trailer { headers[.trailer] = trailer }
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { base in
                var writer = deadline.writer(base)
                if countsAsStream { metrics.streamOpened() }
                defer { if countsAsStream { metrics.streamClosed() } }
                let pipe = BytePipe()
                BytePipe.running.add(pipe)
                defer { BytePipe.running.remove(pipe) }
                // The producer runs beside the writes; when they fail (the client
                // went), leaving the scope cancels it, and the pipe wakes it.
                async let produced: HTTPFields = {
                    do {
                        let trailers = try await produce(pipe)
                        pipe.finish()
                        return trailers
                    } catch {
                        pipe.finish(throwing: error)
                        throw error
                    }
                }()
                try await pipe.drain { try await writer.write($0) }
                let trailers = try await produced
                try await writer.finish(trailers.isEmpty ? nil : trailers)
            })
    }
}
