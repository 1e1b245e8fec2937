import Dispatch
import Foundation
import GRDB
import Synchronization

/// The executor of one SQLite save's async body: the store's write
/// connection's own thread, inside the save's transaction.
///
/// GRDB runs a transaction as one synchronous closure on the writer's
/// queue, and a connection may be used only there. A save of the store
/// contract (``StoreBackend/withSave(author:job:_:)``) is an async body
/// that waits between its writes (for the parser, for the next batch). So
/// the transaction's closure lends its thread to the body: the body runs
/// with this pump as its task executor (SE-0417), and the closure runs the
/// body's jobs one after the other until the body ends the save. The body's
/// calls of the store's primitives are then plain calls on the connection's
/// thread, with no hop; only a real wait (the next batch not ready) lets the
/// thread sleep until the body's task is resumed here.
///
/// A read snapshot whose body is async (``StoreReading/snapshot(_:)``)
/// borrows a reader connection the same way (``ReaderPump``).
///
/// Written by hand: GRDB offers no transaction whose body is async (its
/// connections are bound to their queue), and the store contract needs one.
final class ConnectionPump<Context: AnyObject>: TaskExecutor, Sendable {
    private enum Item: @unchecked Sendable {
        // @unchecked: a job is handed from the thread that enqueues it to the one that runs it, once.
        case job(UnownedJob)
        /// The body ended: commit (nil) or roll back (the error).
        case end((any Error)?)
    }

    private struct State: @unchecked Sendable {
        // @unchecked: the items' jobs (above); used under the mutex only.
        var items: [Item] = []
        /// The save's context (a read's connection), while the transaction's closure serves the body.
        var context: Context?
        /// The thread serving, while it serves.
        var serving: pthread_t?
        /// The transaction's closure has returned (or never ran).
        var closed = false
    }

    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)

    /// Runs the body's jobs on this (the writer's) thread, in the save's
    /// transaction, until the body ends the save; throws the body's error,
    /// which rolls the transaction back.
    func serve(_ context: Context) throws {
        state.withLock {
            $0.context = context
            $0.serving = pthread_self()
        }
        defer {
            state.withLock {
                $0.context = nil
                $0.serving = nil
            }
        }
        while true {
            ready.wait()
            let item = state.withLock { $0.items.removeFirst() }
            switch item {
            case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
            case .end(nil): return
            case .end(let error?): throw error
            }
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.items.append(.job(job))
            return true
        }
        if accepted {
            ready.signal()
        } else {
            // The transaction is over: the task goes on elsewhere, and any
            // primitive it calls fails (``context()``).
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    /// The save's context, for a primitive of the body running on this pump.
    ///
    /// - Throws: ``DepotError/Code/database`` when the transaction is over
    ///   (it could not begin, or it ended), or when called from another
    ///   thread (a task that does not prefer this executor).
    func context() throws -> Context {
        let context = state.withLock { state -> Context? in
            guard let serving = state.serving, pthread_equal(serving, pthread_self()) != 0 else { return nil }
            return state.context
        }
        guard let context else { throw Self.ended }
        return context
    }

    /// Ends the save, after the body's jobs so far: commits when `error` is
    /// nil, else rolls back.
    func end(_ error: (any Error)?) {
        state.withLock { $0.items.append(.end(error)) }
        ready.signal()
    }

    /// Called when the transaction's closure returned or could not run:
    /// jobs not run go on elsewhere, and so do later ones.
    func close() {
        let left = state.withLock { state -> [Item] in
            state.closed = true
            defer { state.items.removeAll() }
            return state.items
        }
        for case .job(let job) in left { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    /// Whether `error` is the pump's own: the body called a primitive once
    /// the transaction was over.
    static func isEnded(_ error: any Error) -> Bool { (error as? DepotError) == ended }

    private static var ended: DepotError {
        DepotError(
            .database,
            "the save's transaction is over (it could not begin, or it ended); nothing of this write was kept")
    }
}

/// The executor of one SQLite save's async body (``ConnectionPump``).
typealias WriterPump = ConnectionPump<SaveContext>
/// The executor of one SQLite read snapshot's async body (``ConnectionPump``).
typealias ReaderPump = ConnectionPump<Database>
