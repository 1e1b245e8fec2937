import Dispatch
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Copies a store's WAL into its file so that the saves waiting for the
/// writer do not wait for the copy of a job's large save.
///
/// SQLite's automatic checkpoint runs in the connection that commits, right
/// after the commit, before the writer is free again. After an import's
/// save, which dirties much of the indexes, that copy takes hundreds of
/// milliseconds, and every save waiting for the writer waited for it too
/// (issue #31, a save during a 5M-row import). Here the writer's WAL hook
/// decides after each commit:
///
/// - a small part of the WAL not copied yet (at most `pages`, SQLite's
///   `wal_autocheckpoint`, as after one-record saves): copied right there,
///   as SQLite would;
/// - a large one (after a job's save): copied by a passive checkpoint on a
///   connection and a thread of its own, on the other core, while the
///   writer serves the saves that waited.
///
/// A WAL starts over from its beginning only when all of it was copied by
/// the time a transaction begins. A copy made beside a writer that goes on
/// never catches up, so each save of a job first settles the WAL
/// (``settle(_:)``): it waits for the copy under way, then copies what is
/// left on the writer. The job pays for its own copy, as it did; the saves
/// that waited for it do not.
///
/// The copying connection syncs as the store's writer does
/// (`synchronous`), so that the store file is on disk before the WAL that
/// held its pages is written over.
///
/// Written by hand: GRDB checkpoints only on the writer's own connection
/// and queue, which is the wait this removes.
final class WALCheckpointer: Sendable {
    private struct State: Sendable {
        var wanted = false
        var running = false
        var closed = false
        /// The WAL's size at the last commit; a smaller one means it started over.
        var frames: Int32 = 0
        /// The frames of the current WAL known copied.
        var copied: Int32 = 0
        /// Counts the WAL's starts over, so that a copy that ended after one
        /// does not count for the new WAL.
        var generation = 0
        /// The copies the thread began and ended.
        var begun = 0
        var ended = 0
        /// Settles under way: while one is, commits ask the thread for no
        /// new copy, so that the settle's own copy on the writer is not
        /// refused as busy and the WAL can start over.
        var settling = 0
        /// Settles waiting for the copy that ends with `ended` reaching `after`.
        var waiting: [(after: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// The waits that the copies ended so far release.
        mutating func released() -> [CheckedContinuation<Void, Never>] {
            let done = waiting.filter { closed || $0.after <= ended }.map(\.continuation)
            waiting.removeAll { closed || $0.after <= ended }
            return done
        }
    }

    private let path: String
    private let pages: Int32
    private let synchronous: Int
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - pages: the WAL size past which a commit has it copied (SQLite's
    ///     `wal_autocheckpoint`, 1,000 by default).
    ///   - synchronous: the store's `PRAGMA synchronous`.
    init(path: String, pages: Int, synchronous: Int) {
        self.path = path
        self.pages = Int32(clamping: max(1, pages))
        self.synchronous = synchronous
        // The thread holds the checkpointer until close() ends it.
        let thread = Thread { self.run() }
        thread.name = "depot-checkpoint"
        thread.start()
    }

    /// Installs the WAL hook on the writer's connection `db` (which turns
    /// SQLite's automatic checkpoint off for it).
    func install(on db: OpaquePointer) {
        // Retained: the hook may outlive the store that made it (a
        // connection GRDB closes later); after close() it copies on the writer.
        let context = Unmanaged.passRetained(self).toOpaque()
        sqlite3_wal_hook(
            db,
            { context, db, _, frames in
                let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue()
                checkpointer.committed(db!, frames: frames)
                return SQLITE_OK
            }, context)
    }

    /// After a commit on the writer: the WAL holds `frames`.
    private func committed(_ db: OpaquePointer, frames: Int32) {
        enum Step { case none, here, thread }
        let step = state.withLock { state -> Step in
            if frames < state.frames {
                state.generation += 1
                state.copied = 0
            }
            state.frames = frames
            guard frames >= pages else { return .none }
            if state.closed || (!state.running && frames - state.copied <= pages) { return .here }
            if state.wanted || state.settling > 0 { return .none }
            state.wanted = true
            return .thread
        }
        switch step {
        case .none: break
        case .here: copy(on: db)
        case .thread: wake.signal()
        }
    }

    /// Settles the WAL before a job's save: waits for the copy under way
    /// (and the one asked for, if any) — not for later ones, which saves
    /// committing meanwhile may keep asking for — then copies what is left
    /// on the writer, so that the save starts a new WAL instead of
    /// lengthening one that is never all copied.
    func settle(_ pool: DatabasePool) async throws {
        state.withLock { $0.settling += 1 }
        defer { state.withLock { $0.settling -= 1 } }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard state.running || state.wanted, !state.closed else { return true }
                state.waiting.append((state.begun + (state.wanted ? 1 : 0), continuation))
                return false
            }
            if now { continuation.resume() }
        }
        let left = state.withLock { $0.frames >= pages && $0.frames > $0.copied }
        guard left else { return }
        try await pool.writeWithoutTransaction { db in
            if let connection = db.sqliteConnection { self.copy(on: connection) }
        }
    }

    /// A passive checkpoint on `db` (the writer's connection, or the
    /// thread's): copies what no reader still needs, never waits.
    private func copy(on db: OpaquePointer) {
        let generation = state.withLock { $0.generation }
        var log: Int32 = 0
        var copied: Int32 = 0
        guard sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied) == SQLITE_OK else {
            return  // busy or failed: tried again after a later commit
        }
        state.withLock { state in
            if state.generation == generation { state.copied = max(state.copied, copied) }
        }
    }

    /// Ends the thread and closes its connection, after the copy under
    /// way. Copies asked for later are made on the writer, as SQLite's are.
    func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wake.signal()
        stopped.wait()
    }

    private func run() {
        var db: OpaquePointer?
        defer {
            if let db { sqlite3_close_v2(db) }
            for w in state.withLock({ $0.released() }) { w.resume() }
            stopped.signal()
        }
        while true {
            wake.wait()
            let go = state.withLock { state -> Bool in
                state.wanted = false
                state.running = !state.closed
                if state.running { state.begun += 1 }
                return state.running
            }
            guard go else { return }
            if db == nil { db = open() }
            if let db { copy(on: db) }
            let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.running = false
                state.ended += 1
                return state.released()
            }
            for w in released { w.resume() }
        }
    }

    /// Copies what is left of the WAL at `path` into the store file and
    /// removes it, once every connection of the store is closed.
    ///
    /// GRDB closes a pool's writer before its readers (GRDB issue #739), so
    /// a store's last connection to close is a read-only one. That one
    /// cannot take the lock SQLite's last close needs, and SQLite then
    /// leaves the WAL beside the file, with the last commits in it: a copy
    /// of the store file alone (a backup after `systemctl stop`) would miss
    /// them. One read-write connection, opened alone, does it instead: its
    /// close copies the WAL into the file, syncs the file (`synchronous` is
    /// SQLite's default, FULL, whatever the store's durability: the WAL is
    /// removed next), and removes the WAL and its index. When another
    /// process has the store open, SQLite leaves both, as it should.
    static func finish(path: String) {
        var db: OpaquePointer?
        defer { sqlite3_close_v2(db) }
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            return
        }
        // A read, so that the connection opens the WAL its close checkpoints.
        sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", nil, nil, nil)
    }

    private func open() -> OpaquePointer? {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            sqlite3_close_v2(db)
            return nil
        }
        sqlite3_exec(db, "PRAGMA synchronous = \(synchronous)", nil, nil, nil)
        return db
    }
}
