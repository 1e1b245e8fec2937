import DepotEngine
import Foundation
import Synchronization

/// The daemon's counters, served at `/v1/metrics` in the Prometheus text
/// format. Written by hand: a dozen counters do not need a metrics backend.
public final class Metrics: Sendable {
    private struct State {
        var jobsSubmitted: [String: Int] = [:]
        var jobsFinished: [String: Int] = [:]
        var rowsImported = 0
        var saves = 0
        var lastImport: [String: (read: Int, saves: Int)] = [:]
        var requests: [String: Int] = [:]
        var requestSeconds = 0.0
        var requestCount = 0
        var requestBuckets = [Int](repeating: 0, count: Metrics.buckets.count)
    }
    static let buckets: [Double] = [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5]
    private let state = Mutex(State())

    public init() {}

    func jobSubmitted(_ kind: String) { state.withLock { $0.jobsSubmitted[kind, default: 0] += 1 } }
    func jobFinished(_ result: String) { state.withLock { $0.jobsFinished[result, default: 0] += 1 } }

    /// Counts an import's progress: only the growth since its last report.
    func importProgressed(job: String, _ p: ImportProgress) {
        state.withLock { s in
            let last = s.lastImport[job] ?? (0, 0)
            if p.read > last.read { s.rowsImported += p.read - last.read }
            if p.saves > last.saves { s.saves += p.saves - last.saves }
            s.lastImport[job] = p.finished ? nil : (p.read, p.saves)
        }
    }

    func request(status: Int, seconds: Double) {
        state.withLock { s in
            s.requests["\(status)", default: 0] += 1
            s.requestSeconds += seconds
            s.requestCount += 1
            for (i, b) in Metrics.buckets.enumerated() where seconds <= b { s.requestBuckets[i] += 1 }
        }
    }

    /// The Prometheus text exposition.
    public func render() -> String {
        let s = state.withLock { $0 }
        var out = ""
        out += "# HELP depot_jobs_submitted_total Jobs submitted, by kind.\n# TYPE depot_jobs_submitted_total counter\n"
        for (k, v) in s.jobsSubmitted.sorted(by: { $0.key < $1.key }) { out += "depot_jobs_submitted_total{kind=\"\(k)\"} \(v)\n" }
        out += "# HELP depot_jobs_finished_total Jobs finished, by state.\n# TYPE depot_jobs_finished_total counter\n"
        for (k, v) in s.jobsFinished.sorted(by: { $0.key < $1.key }) { out += "depot_jobs_finished_total{state=\"\(k)\"} \(v)\n" }
        out += "# HELP depot_rows_imported_total Records read by imports and saved.\n# TYPE depot_rows_imported_total counter\n"
        out += "depot_rows_imported_total \(s.rowsImported)\n"
        out += "# HELP depot_saves_total Saves committed by jobs.\n# TYPE depot_saves_total counter\n"
        out += "depot_saves_total \(s.saves)\n"
        out += "# HELP depot_requests_total HTTP requests, by status.\n# TYPE depot_requests_total counter\n"
        for (k, v) in s.requests.sorted(by: { $0.key < $1.key }) { out += "depot_requests_total{status=\"\(k)\"} \(v)\n" }
        out += "# HELP depot_request_duration_seconds HTTP request latency.\n# TYPE depot_request_duration_seconds histogram\n"
        for (i, b) in Metrics.buckets.enumerated() {
            out += "depot_request_duration_seconds_bucket{le=\"\(b)\"} \(s.requestBuckets[i])\n"
        }
        out += "depot_request_duration_seconds_bucket{le=\"+Inf\"} \(s.requestCount)\n"
        out += "depot_request_duration_seconds_sum \(s.requestSeconds)\n"
        out += "depot_request_duration_seconds_count \(s.requestCount)\n"
        return out
    }
}
