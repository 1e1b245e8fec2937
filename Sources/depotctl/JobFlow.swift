import DepotClient
import Foundation

enum JobFlow {
    /// Follows job `id` to its end, showing its progress unless `quiet`;
    /// its last record.
    static func follow(
        _ client: DaemonClient, _ id: String, quiet: Bool, onEvent: ((Job) throws -> Void)? = nil
    ) async throws -> Job {
        let display = quiet ? nil : ProgressDisplay()
        var last: Job?
        for try await job in client.progress(of: id) {
            last = job
            try onEvent?(job)
            if job.isFinal { break }
            display?.show(job)
        }
        display?.clear()
        guard let last else {
            throw Failure("the daemon ended job \(id)'s events without its end; see depotctl job \(id)")
        }
        guard last.isFinal else {
            throw Failure("the daemon stopped before job \(id) ended; it resumes when the daemon starts again")
        }
        return last
    }

    static func finish(_ job: Job, json: Bool, human: (Job) -> String) throws {
        if json {
            try Out.json(job)
        } else if job.state == .succeeded {
            Out.line(human(job))
        }
        switch job.state {
        case .succeeded: return
        case .cancelled: throw Failure("job \(job.id) was cancelled (\(job.summary) before that)")
        default: throw Failure("job \(job.id) failed: \(job.error ?? "no reason given")")
        }
    }
}
