import CSystemd
package import DepotEngine
import DepotWire
import Foundation
import Synchronization

/// The daemon's counters, served at `/v1/metrics` in the Prometheus text
/// format. Written by hand: a dozen counters do not need a metrics backend.
package final class Metrics: Sendable {
    /// The last hour of the figures below, for the console's charts.
    package let figures = Figures()
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
        var saveSeconds = 0.0
        var saveBuckets = [Int](repeating: 0, count: Metrics.buckets.count)
        var connections = 0
        var recordSaves = 0
        var recordSaveSeconds = 0.0
        var recordSaveBuckets = [Int](repeating: 0, count: Metrics.buckets.count)
        var connectionsTotal = 0
        var streams = 0
        /// The most streams open since memory was last given back.
        var streamsPeak = 0
        var streamsTimedOut = 0
        var liveResultsShared = 0
        var trimAtZero = false
        var connectionsRefused = 0
        var requestsTimedOut = 0
    }
    static let buckets: [Double] = [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5]
    private let state = Mutex(State())

    package init() {}

    func jobSubmitted(_ kind: String) { state.withLock { $0.jobsSubmitted[kind, default: 0] += 1 } }
    func jobFinished(_ result: String) { state.withLock { $0.jobsFinished[result, default: 0] += 1 } }

    /// Counts an import's progress: only the growth since its last report.
    package func importProgressed(job: String, _ p: ImportProgress) {
        state.withLock { s in
            let last = s.lastImport[job] ?? (0, 0)
            if p.read > last.read { s.rowsImported += p.read - last.read }
            if p.saves > last.saves {
                s.saves += p.saves - last.saves
                // One event follows each save, so each save's duration is seen once.
                if let seconds = p.lastSaveSeconds {
                    s.saveSeconds += seconds
                    for (i, b) in Metrics.buckets.enumerated() where seconds <= b { s.saveBuckets[i] += 1 }
                }
            }
            s.lastImport[job] = p.finished ? nil : (p.read, p.saves)
        }
    }

    /// A save over the API (a change set, or one record's PUT, PATCH or
    /// DELETE) answered, whatever its outcome, in `seconds`.
    package func saveAnswered(seconds: Double) {
        state.withLock { s in
            s.recordSaves += 1
            s.recordSaveSeconds += seconds
            for (i, b) in Metrics.buckets.enumerated() where seconds <= b { s.recordSaveBuckets[i] += 1 }
        }
    }

    /// The totals ``Figures`` takes its points from.
    func totals() -> Figures.Totals {
        state.withLock { s in
            Figures.Totals(
                rows: s.rowsImported, saves: s.recordSaves, saveSeconds: s.recordSaveSeconds, jobSaves: s.saves,
                jobSaveSeconds: s.saveSeconds)
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

    func connectionOpened() {
        state.withLock { s in
            s.connections += 1
            s.connectionsTotal += 1
        }
    }

    func connectionClosed() { state.withLock { $0.connections -= 1 } }

    func streamOpened() {
        state.withLock { s in
            s.streams += 1
            s.streamsPeak = max(s.streamsPeak, s.streams)
        }
    }

    /// A stream ended. Once half of the most streams open have ended, the
    /// memory they held goes back to the system (`malloc_trim`): glibc keeps
    /// freed memory in its arenas, so after 1,000 live fetches closed the
    /// daemon stayed at their peak (issue #35); and once more when the
    /// last has ended (10,000 closed streams left 359 MiB, then 166).
    /// Off the caller's thread.
    func streamClosed() {
        let trim = state.withLock { s -> Bool in
            s.streams -= 1
            if s.streamsPeak >= 64, s.streams <= s.streamsPeak / 2 {
                s.streamsPeak = s.streams
                s.trimAtZero = s.streams > 0
                return true
            }
            // And once more when the last of them ended.
            guard s.streams == 0, s.trimAtZero else { return false }
            s.trimAtZero = false
            return true
        }
        // Detached: malloc_trim takes milliseconds, off the thread that closed the stream; nothing awaits it.
        // Half a second later: what the streams held (their feeds, a shared
        // first result) is freed as their tasks unwind, after this count;
        // a trim before that gave none of it back (issue 51).
        if trim {
            Task.detached(priority: .background) {
                try? await Task.sleep(for: .milliseconds(500))
                _ = malloc_trim(0)
            }
        }
    }
    func streamTimedOut() { state.withLock { $0.streamsTimedOut += 1 } }
    func liveResultShared() { state.withLock { $0.liveResultsShared += 1 } }
    func connectionRefused() { state.withLock { $0.connectionsRefused += 1 } }
    func requestTimedOut() { state.withLock { $0.requestsTimedOut += 1 } }

    /// The Prometheus text exposition.
    package func render() -> String {
        let s = state.withLock { $0 }
        var out = ""
        out += "# HELP depot_jobs_submitted_total Jobs submitted, by kind.\n# TYPE depot_jobs_submitted_total counter\n"
        for (k, v) in s.jobsSubmitted.sorted(by: { $0.key < $1.key }) {
            out += "depot_jobs_submitted_total{kind=\"\(k)\"} \(v)\n"
        }
        out += "# HELP depot_jobs_finished_total Jobs finished, by state.\n# TYPE depot_jobs_finished_total counter\n"
        for (k, v) in s.jobsFinished.sorted(by: { $0.key < $1.key }) {
            out += "depot_jobs_finished_total{state=\"\(k)\"} \(v)\n"
        }
        out +=
            "# HELP depot_rows_imported_total Records read by imports and saved.\n# TYPE depot_rows_imported_total counter\n"
        out += "depot_rows_imported_total \(s.rowsImported)\n"
        out += "# HELP depot_saves_total Saves committed by jobs.\n# TYPE depot_saves_total counter\n"
        out += "depot_saves_total \(s.saves)\n"
        out +=
            "# HELP depot_save_duration_seconds How long an import's save takes, from its first record to its commit.\n"
        out += "# TYPE depot_save_duration_seconds histogram\n"
        out += histogram("depot_save_duration_seconds", s.saveBuckets, sum: s.saveSeconds, count: s.saves)
        out +=
            "# HELP depot_record_save_duration_seconds How long a save over the API (POST save, a record's PUT, "
            + "PATCH or DELETE) takes to be answered.\n# TYPE depot_record_save_duration_seconds histogram\n"
        out += histogram(
            "depot_record_save_duration_seconds", s.recordSaveBuckets, sum: s.recordSaveSeconds, count: s.recordSaves)
        out +=
            "# HELP depot_connections_open Control socket connections open now.\n# TYPE depot_connections_open gauge\n"
        out += "depot_connections_open \(s.connections)\n"
        out +=
            "# HELP depot_connections_total Control socket connections accepted.\n# TYPE depot_connections_total counter\n"
        out += "depot_connections_total \(s.connectionsTotal)\n"
        out +=
            "# HELP depot_streams_open Streamed answers being served now: live fetches, history follows, job events.\n"
        out += "# TYPE depot_streams_open gauge\ndepot_streams_open \(s.streams)\n"
        out +=
            "# HELP depot_streams_timed_out_total Streamed answers ended because their client read nothing "
            + "for stream_write_timeout.\n# TYPE depot_streams_timed_out_total counter\n"
        out += "depot_streams_timed_out_total \(s.streamsTimedOut)\n"
        out +=
            "# HELP depot_live_results_shared_total Live fetches with changes whose first result another stream, "
            + "opened on the same fetch with no commit between, had read.\n# TYPE depot_live_results_shared_total counter\n"
        out += "depot_live_results_shared_total \(s.liveResultsShared)\n"
        out +=
            "# HELP depot_connections_refused_total Connections refused over max_connections or "
            + "max_connections_per_client.\n# TYPE depot_connections_refused_total counter\n"
        out += "depot_connections_refused_total \(s.connectionsRefused)\n"
        out +=
            "# HELP depot_requests_timed_out_total Connections closed because a request's head or body came "
            + "too slowly (request_timeout).\n# TYPE depot_requests_timed_out_total counter\n"
        out += "depot_requests_timed_out_total \(s.requestsTimedOut)\n"
        out += "# HELP depot_requests_total HTTP requests, by status.\n# TYPE depot_requests_total counter\n"
        for (k, v) in s.requests.sorted(by: { $0.key < $1.key }) {
            out += "depot_requests_total{status=\"\(k)\"} \(v)\n"
        }
        out +=
            "# HELP depot_request_duration_seconds HTTP request latency.\n# TYPE depot_request_duration_seconds histogram\n"
        out += histogram(
            "depot_request_duration_seconds", s.requestBuckets, sum: s.requestSeconds, count: s.requestCount)
        return out
    }

    /// The consumers' lag gauges (DESIGN §11), from each store's consumers
    /// read at scrape time.
    static func consumerLag(_ stores: [(store: String, consumers: [DepotEngine.Consumer])]) -> String {
        var transactions =
            "# HELP depot_consumer_lag_transactions Transactions a consumer has not acknowledged.\n"
            + "# TYPE depot_consumer_lag_transactions gauge\n"
        var seconds =
            "# HELP depot_consumer_lag_seconds Age of a consumer's oldest unacknowledged transaction.\n"
            + "# TYPE depot_consumer_lag_seconds gauge\n"
        for (store, consumers) in stores {
            for c in consumers {
                let labels = "{store=\"\(label(store))\",consumer=\"\(label(c.name))\"}"
                transactions += "depot_consumer_lag_transactions\(labels) \(c.lagTransactions)\n"
                seconds += "depot_consumer_lag_seconds\(labels) \(c.lagSeconds)\n"
            }
        }
        return transactions + seconds
    }

    /// The processors' progress gauges (DESIGN §17), read at scrape time.
    static func processorProgress(_ stores: [(store: String, processors: [ProcessorInfo])]) -> String {
        var done =
            "# HELP depot_processor_done_records Records of a processor's committed batches.\n"
            + "# TYPE depot_processor_done_records gauge\n"
        var total =
            "# HELP depot_processor_total_records Records a processor goes through.\n"
            + "# TYPE depot_processor_total_records gauge\n"
        var leased =
            "# HELP depot_processor_leased_batches Batches of a processor under a lease now.\n"
            + "# TYPE depot_processor_leased_batches gauge\n"
        for (store, processors) in stores {
            for p in processors {
                let labels = "{store=\"\(label(store))\",processor=\"\(label(p.name))\"}"
                done += "depot_processor_done_records\(labels) \(p.done)\n"
                total += "depot_processor_total_records\(labels) \(p.total)\n"
                leased += "depot_processor_leased_batches\(labels) \(p.leased)\n"
            }
        }
        return done + total + leased
    }

    /// A label value with `\`, `"` and newlines escaped, as the text format asks.
    private static func label(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private func histogram(_ name: String, _ buckets: [Int], sum: Double, count: Int) -> String {
        var out = ""
        for (i, b) in Metrics.buckets.enumerated() { out += "\(name)_bucket{le=\"\(b)\"} \(buckets[i])\n" }
        out += "\(name)_bucket{le=\"+Inf\"} \(count)\n"
        out += "\(name)_sum \(sum)\n"
        out += "\(name)_count \(count)\n"
        return out
    }
}
