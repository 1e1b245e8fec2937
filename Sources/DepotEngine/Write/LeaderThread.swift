import Dispatch
import Foundation
import Synchronization

/// The thread that leads group commits (``SaveQueue``): a task executor of
/// one thread of its own, shared by every store's queue.
///
/// A group's leader is on the critical path of every save: between one
/// commit and the next, it takes the saves that came meanwhile and hands
/// them to the store's writer. On the cooperative pool its turn came after
/// every job queued there before it (decoding and answering other
/// requests), and the writer sat idle about as long as it worked (issue
/// #31: 466 commits/s of 2.1 ms each, half of it waiting). On a thread that
/// does nothing else, it runs as soon as the commit wakes it; the work it
/// does there is small (taking the group, planning it), since the saves'
/// own work runs on the writer's thread and their answers go back to the
/// pool.
///
/// Written by hand: Swift's runtime offers no executor bound to one thread
/// on Linux, and none of the packages here does either.
final class LeaderThread: TaskExecutor, Sendable {
    /// The one leader thread of the process.
    static let shared = LeaderThread(name: "depot-saves")

    private let jobs = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    private init(name: String) {
        // The thread lives as long as the process, as `shared` does.
        let thread = Thread { self.run() }
        thread.name = name
        thread.start()
    }

    private func run() {
        while true {
            ready.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }
}
