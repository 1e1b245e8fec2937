import GRDB
import Synchronization

/// The read side of a store: fetches, aggregates, duplicates and history.
///
/// Every call runs on one of the store's WAL reader connections, in a
/// snapshot of the last commit, so a read never waits for a running save and
/// never sees half of one. A `StoreReader` is a cheap value; copy it freely.
///
/// For example:
///
/// ```swift
/// let paris = try await store.reader.count(
///     FetchDescriptor(entity: "Trip", where: "destination == $city", arguments: ["city": "Paris"]))
/// ```
public struct StoreReader: Sendable {
    let pool: DatabasePool
    let box: SchemaBox
    /// The store's schema now (entities created over the API change it).
    package var schema: StoreSchema { box.value }
    package var dialect: any SQLDialect { SQLiteDialect() }
    package let signal: CommitSignal
    let live: LiveReads
    /// The streamed reads under way, which a closing store waits for.
    let streams = StreamReads()

    init(pool: DatabasePool, schema: SchemaBox, signal: CommitSignal) {
        self.pool = pool
        self.box = schema
        self.signal = signal
        self.live = LiveReads(pool: pool)
    }

    /// The store's name.
    public var storeName: String { schema.name }

    /// The rows of `statement`, in a snapshot of the last commit.
    package func rows(_ statement: SQLStatement) async throws -> [[Value]] {
        try await read { db in try SQLiteSession.rows(db, statement) }
    }

    /// Runs `body` in a read-only snapshot, translating database errors.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Store.translate(error, store: schema.name)
        }
    }

    /// Runs `body` in a snapshot of the last commit on a connection of its
    /// own, opened for it and closed after it, not on one of the pool's
    /// readers: a streamed answer (an export, duplicates) reads for as long
    /// as its client takes to read, and no client may hold the readers
    /// that every fetch, count and history page needs (issue #35: eight
    /// exports read by nobody stopped every other read).
    func streamRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        streams.begin()
        defer { streams.end() }
        do {
            return try await Self.snapshotRead(pool, body)
        } catch {
            throw Store.translate(error, store: schema.name)
        }
    }

    /// `body` in a snapshot of its own, whose connection is closed by the
    /// time this returns (the snapshot's last reference goes with it).
    private static func snapshotRead<T: Sendable>(
        _ pool: DatabasePool, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        let snapshot = try pool.makeSnapshot()
        return try await snapshot.read(body)
    }

    /// Runs `body` in a snapshot shared with the other live streams' reads
    /// waiting now (``LiveReads``), translating database errors.
    func liveRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await live.read(body)
        } catch {
            throw Store.translate(error, store: schema.name)
        }
    }
}

/// The streamed reads of a store under way (``StoreReader/streamRead(_:)``).
///
/// Each holds a connection of its own for as long as its client reads, and
/// while one is open, SQLite cannot copy the WAL into the store file when
/// the store closes (``WALCheckpointer/finish(path:)``). So a closing store
/// waits for them, for a while: the daemon stops their streams first.
final class StreamReads: Sendable {
    private let count = Mutex(0)

    func begin() { count.withLock { $0 += 1 } }
    func end() { count.withLock { $0 -= 1 } }

    /// Waits until no streamed read is under way, for at most `limit`.
    ///
    /// - Returns: whether none is.
    func ended(within limit: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        // Polled: this runs once, as a store closes, and reads end within
        // milliseconds once their streams are stopped.
        while count.withLock({ $0 }) > 0 {
            if clock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
