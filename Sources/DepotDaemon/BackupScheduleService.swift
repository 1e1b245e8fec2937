import DepotEngine
import DepotWire
import Foundation
import Logging
import ServiceLifecycle

/// Runs each store's own backups (`[store.backup] every, keep`, DESIGN
/// §20): a `backup` job into `backup_dir` once the newest backup of the
/// store there is `every` old (at once when there is none), and, once it
/// succeeds, the store's backups in `backup_dir` past the newest `keep`
/// removed, each copy with its manifest. Backups written elsewhere (`--to`)
/// are never removed. The schedule is read again at every turn, so that a
/// reload changes it.
struct BackupScheduleService: Service {
    let runtime: DaemonRuntime
    /// The longest wait between two looks at the schedule (a reload may add one).
    var longestWait: Duration = .seconds(60)

    func run() async throws {
        // When a store's last scheduled backup failed: tried again after
        // `every` or ten minutes, whichever comes first, not at once.
        var failed: [String: Date] = [:]
        while true {
            let config = runtime.settings.current
            var wait = longestWait
            for store in config.stores {
                guard let schedule = store.backupSchedule, runtime.jobs.stores.store(store.name) != nil else {
                    continue
                }
                let kept = BackupRestore.backups(in: config.backupDir, store: store.name)
                let newest = kept.first.flatMap { Timestamp.date($0.manifest.time) }
                var due = newest.map { $0.addingTimeInterval(Self.seconds(schedule.every)) } ?? .distantPast
                if let failure = failed[store.name] {
                    due = max(due, failure.addingTimeInterval(min(Self.seconds(schedule.every), 600)))
                }
                let left = due.timeIntervalSinceNow
                if left > 0 {
                    wait = min(wait, .milliseconds(Int64(left * 1000) + 1))
                    continue
                }
                let succeeded = await backUp(store.name, keep: schedule.keep, folder: config.backupDir)
                failed[store.name] = succeeded ? nil : Date()
                wait = .zero
            }
            let pause = wait
            do {
                // Graceful shutdown (SIGTERM) cancels the wait at once.
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: pause) }
            } catch {
                return  // the daemon is stopping
            }
        }
    }

    /// Submits a backup of `store` into `folder` and waits for its end;
    /// after a success, removes the store's backups there past the newest `keep`.
    private func backUp(_ store: String, keep: Int, folder: String) async -> Bool {
        let logger = runtime.logger
        do {
            let path = ControlRoutes.newBackupPath(folder: folder, store: store)
            let record = JobRecord(
                id: JobRecord.newID(), spec: .backup(path: path, verify: false), store: store, author: "depotd")
            // Heard from before the submission: a short backup cannot end unheard.
            let events = await runtime.jobs.events(job: record.id)
            _ = try await runtime.jobs.submit(record)
            // A shutdown ends the wait (the job, interrupted, resumes at the next start).
            let last =
                (try? await cancelWhenGracefulShutdown {
                    var last = record
                    for await event in events {
                        last = event
                        if event.state.isFinal { break }
                    }
                    return last
                }) ?? record
            guard last.state == .succeeded else {
                // The job's own end is logged and kept; the next turn tries again after `every`.
                logger.warning(
                    "a scheduled backup did not succeed",
                    metadata: [
                        LogKey.store: "\(store)", LogKey.jobID: "\(record.id)",
                        LogKey.error: "\(last.error ?? last.state.rawValue)"
                    ])
                return false
            }
            for old in BackupRestore.backups(in: folder, store: store).dropFirst(keep) {
                unlink(Store.manifestPath(for: old.path))
                unlink(old.path)
                logger.info(
                    "an old backup removed (keep)",
                    metadata: [LogKey.store: "\(store)", LogKey.path: "\(old.manifest.file)"])
            }
            return true
        } catch {
            logger.error(
                "a scheduled backup cannot start", metadata: [LogKey.store: "\(store)", LogKey.error: "\(error)"])
            return false
        }
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
