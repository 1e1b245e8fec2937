import NIOCore
import PostgresNIO
import Synchronization

/// Statements raced against their connection's close
/// (``PostgresSQL/whileOpen(_:_:)``, ``PostgresSQL/copy(_:into:columns:logger:_:)``):
/// a statement ends with its own answer, or with an error once its
/// connection closed. Each connection gets one callback on its close,
/// however many statements it runs (NIO keeps a future's callbacks until
/// it completes: one a statement would stay with a pooled connection for
/// its whole life).
enum ConnectionWatch {
    /// The statements waiting on one connection.
    private final class Watch: Sendable {
        struct Waiters {
            var next = 0
            var lost: [Int: @Sendable () -> Void] = [:]
            var closed = false
        }
        let waiters = Mutex(Waiters())

        /// Adds what to do if the connection closes first; its key.
        func add(_ lost: @escaping @Sendable () -> Void) -> Int? {
            let key = waiters.withLock { w -> Int? in
                if w.closed { return nil }
                w.next += 1
                w.lost[w.next] = lost
                return w.next
            }
            if key == nil { lost() }
            return key
        }

        func remove(_ key: Int) { _ = waiters.withLock { $0.lost.removeValue(forKey: key) } }

        func close() {
            let all = waiters.withLock { w in
                w.closed = true
                defer { w.lost = [:] }
                return Array(w.lost.values)
            }
            for lost in all { lost() }
        }
    }

    private static let watches = Mutex<[ObjectIdentifier: Watch]>([:])

    /// The watch of `connection`, made (with its one callback) at its first statement.
    private static func watch(_ connection: PostgresConnection) -> Watch {
        let id = ObjectIdentifier(connection)
        let (watch, isNew) = watches.withLock { all -> (Watch, Bool) in
            if let known = all[id] { return (known, false) }
            let made = Watch()
            all[id] = made
            return (made, true)
        }
        if isNew {
            connection.closeFuture.whenComplete { _ in
                // This connection's watch only (another may have its address by then).
                watches.withLock { all in if all[id] === watch { all[id] = nil } }
                watch.close()
            }
        }
        return watch
    }

    /// `task`'s result, or `lost` once `connection` closed and `task` has
    /// not answered within a tenth of a second (its own answer, the
    /// server's error, is the better one when it comes).
    static func race<T: Sendable>(_ task: Task<T, any Error>, on connection: PostgresConnection, lost: any Error)
        async throws -> T
    {
        let watch = watch(connection)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let once = Once(continuation)
            let key = watch.add {
                // Unstructured: a grace for the statement's own answer, off the event loop.
                Task(executorPreference: LeaseExecutor.current) {
                    try? await Task.sleep(for: .milliseconds(100))
                    once.end(.failure(lost))
                }
            }
            // Unstructured: waits for the statement on behalf of the continuation.
            Task(executorPreference: LeaseExecutor.current) {
                let result = await task.result
                if let key { watch.remove(key) }
                once.end(result)
            }
        }
    }
}

/// A continuation resumed by the first of its ends.
final class Once<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>
    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }

    func end(_ result: Result<T, any Error>) {
        continuation.withLock { c -> CheckedContinuation<T, any Error>? in
            defer { c = nil }
            return c
        }?
        .resume(with: result)
    }
}
