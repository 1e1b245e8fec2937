import DepotEngine
import NIOCore
import Synchronization

/// The first results of live fetches with changes, shared by the streams
/// that open on the same descriptor of the same store with no commit in
/// between (issue #35).
///
/// A thousand clients that open the same live fetch at once used to read
/// and encode the same result a thousand times (2 ms each on 100k trips:
/// JSON encoding, mostly), and each stream held its own copy. Here the
/// first of them reads it (the others that come meanwhile wait for that
/// read), and the rest start their feeds from its state
/// (``ResultFeed/start(from:)``) and send the same bytes.
///
/// A result is shared only while the store's ``StoreReading/commitCount``
/// is the one read before it: a stream then wakes at the next commit and
/// reads the changes after the result's token, as its own read would have.
/// Results above ``maxBytes`` in all are not kept past their read, and a
/// result is kept only while a stream that started from it is open (issue
/// 51: 1,000 live fetches with distinct filters, all closed, left their
/// results and member sets here until the store's next commit: 85 → 130
/// MiB).
final class LiveStarts: Sendable {
    struct Start: Sendable {
        let state: ResultFeed.Started
        /// The `result` event's line, newline included.
        let line: ByteBuffer
    }

    private struct Key: Hashable {
        let store: ObjectIdentifier
        let descriptor: FetchDescriptor
    }

    private struct Entry {
        /// The store, held so that its identifier cannot name another
        /// store while the entry lasts.
        let owner: AnyObject
        let version: UInt64
        let start: Task<Start, any Error>
        var bytes = 0
        /// The streams open on it (``Hold``s alive).
        var holders = 1
    }

    /// Keeps a shared result while the stream that started from it is open:
    /// the last one dropped lets it go.
    final class Hold: Sendable {
        private let release: @Sendable () -> Void
        init(_ release: @escaping @Sendable () -> Void) { self.release = release }
        deinit { release() }
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes = 0
    }

    private let state = Mutex(State())
    /// The bytes of results kept between opens, at most.
    let maxBytes: Int

    init(maxBytes: Int = 32 << 20) { self.maxBytes = maxBytes }

    /// The first result of `descriptor` on `store` at `version`: the one
    /// another stream read at that version (`shared`), or `read`'s.
    func start(
        store: any StoreBackend, descriptor: FetchDescriptor, version: UInt64,
        read: @escaping @Sendable () async throws -> Start
    ) async throws -> (start: Start, shared: Bool, hold: Hold) {
        let key = Key(store: ObjectIdentifier(store as AnyObject), descriptor: descriptor)
        let (task, shared) = state.withLock { s -> (Task<Start, any Error>, Bool) in
            if var entry = s.entries[key], entry.version == version {
                entry.holders += 1
                s.entries[key] = entry
                return (entry.start, true)
            }
            // Results of this store at an older version are of no use now.
            for (k, e) in s.entries where k.store == key.store && e.version != version {
                s.entries[k] = nil
                s.bytes -= e.bytes
            }
            // Not a child of this request: the streams waiting on it share
            // it, and it ends with its read whoever hangs up.
            let task = Task { try await read() }
            s.entries[key] = Entry(owner: store as AnyObject, version: version, start: task)
            return (task, false)
        }
        do {
            let start = try await task.value
            state.withLock { s in
                guard var entry = s.entries[key], entry.version == version, entry.bytes == 0 else { return }
                let bytes = start.line.readableBytes
                if s.bytes + bytes > maxBytes {
                    s.entries[key] = nil
                } else {
                    entry.bytes = bytes
                    s.entries[key] = entry
                    s.bytes += bytes
                }
            }
            let hold = Hold { [weak self] in self?.release(key, version: version) }
            return (start, shared, hold)
        } catch {
            state.withLock { s in
                if let entry = s.entries[key], entry.version == version, entry.bytes == 0 { s.entries[key] = nil }
            }
            throw error
        }
    }

    private func release(_ key: Key, version: UInt64) {
        state.withLock { s in
            guard var entry = s.entries[key], entry.version == version else { return }
            entry.holders -= 1
            if entry.holders > 0 {
                s.entries[key] = entry
            } else {
                s.entries[key] = nil
                s.bytes -= entry.bytes
            }
        }
    }
}
