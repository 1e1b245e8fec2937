import DepotClient
import Foundation
import NIOHTTP1

/// Submitting a job, following it to its end, reporting how it ended.
enum JobFlow {
    /// Submits a job; returns its record's JSON text.
    static func submit(_ client: DaemonClient, _ body: [String: JSONValue]) async throws -> String {
        let bytes = try await client.call(
            .POST, "/v1/jobs",
            body: .json(body))
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Follows a job's events to its end; shows progress unless `quiet`.
    /// Every event goes to `onEvent` (for NDJSON output). Returns the last
    /// record and its JSON text.
    static func follow(
        _ client: DaemonClient, _ id: String, quiet: Bool,
        onEvent: ((String) -> Void)? = nil
    ) async throws -> (Job, String) {
        let display = quiet ? nil : ProgressDisplay()
        var last: (Job, String)?
        try await client.lines(.GET, "/v1/jobs/\(id)/events") { line in
            let job = try Job.decode(line)
            last = (job, line)
            onEvent?(line)
            if job.isFinal { return false }
            display?.show(job)
            return true
        }
        display?.clear()
        guard let last else {
            throw Failure("the daemon ended job \(id)'s events without its end; see depotctl job \(id)")
        }
        guard last.0.isFinal else {
            throw Failure("the daemon stopped before job \(id) ended; it resumes when the daemon starts again")
        }
        return last
    }

    /// Prints how a job ended and fails when it did not succeed.
    static func finish(_ job: Job, text: String, json: Bool, human: (Job) -> String) throws {
        if json {
            Out.line(text)
        } else if job.state == "succeeded" {
            Out.line(human(job))
        }
        switch job.state {
        case "succeeded": return
        case "cancelled": throw Failure("job \(job.id) was cancelled (\(job.summary) before that)")
        default: throw Failure("job \(job.id) failed: \(job.error ?? "no reason given")")
        }
    }
}
