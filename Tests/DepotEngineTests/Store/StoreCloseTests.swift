import Dispatch
import Foundation
import Testing

@testable import DepotEngine

/// `Store.close()` waits for the reads under way, and an async read gives
/// its connection back on the threads every task shares (the cooperative
/// pool, as many threads as cores). A close that waited on one of those
/// threads could hold up the very read it waited for: the test suite hung
/// so on 2 cores, one thread waiting for a daemon to exit, the other
/// closing a store.
@Suite("Closing a store")
struct StoreCloseTests {
    /// A wait for `semaphore` on a thread that is not the pool's.
    static func wait(_ semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { continuation in
            waits.async {
                semaphore.wait()
                continuation.resume()
            }
        }
    }

    static let waits = DispatchQueue(label: "store-close-test", attributes: .concurrent)

    @Test("a close with a read under way ends while every thread of the pool but one is blocked")
    func closeBesideBlockedThreads() async throws {
        let t = try await TemporaryStore()
        let reader = t.store.reader
        // A read under way when the store closes: its body (on a reader
        // connection's queue) ends once the close has begun.
        let inRead = DispatchSemaphore(value: 0)
        let read = Task {
            try await reader.read { _ -> Int in
                inRead.signal()
                while !reader.signal.isClosed { usleep(500) }
                return 1
            }
        }
        await Self.wait(inRead)
        // Every thread of the pool but one held by a blocking wait.
        let held = max(0, ProcessInfo.processInfo.activeProcessorCount - 1)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<held {
            Task.detached {
                holding.signal()
                release.wait()
            }
        }
        for _ in 0..<held { await Self.wait(holding) }
        // Were the close to wait on the last thread, nothing could end it:
        // the process stops with this message rather than hang.
        let closed = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            if closed.wait(timeout: .now() + 120) == .timedOut {
                fatalError("Store.close() did not end in 120 s beside \(held) blocked threads of the pool")
            }
        }
        try await t.store.close()
        closed.signal()
        for _ in 0..<held { release.signal() }
        #expect(try await read.value == 1)
    }

    @Test(
        "a closed store's file holds every commit alone: the WAL is copied into it and removed, though a reader closes last"
    )
    func closeLeavesTheFileWhole() async throws {
        let t = try await TemporaryStore()
        let trips = (0..<500).map { i -> [Value] in
            [.string("t\(i)"), "n", "Oslo", "2025-01-01", nil, .double(Double(i)), false, nil]
        }
        for part in stride(from: 0, to: trips.count, by: 100) {
            try await t.insertTrips(Array(trips[part..<part + 100]))
        }
        // A reader connection open, as any fetch leaves one.
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Trip")) == 500)
        try await t.store.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: t.folder.path)
        #expect(!files.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }, "\(files)")
        // A copy of the store file alone, as a backup after a stop makes it.
        let copy = try TemporaryStore.makeFolder()
        defer { try? FileManager.default.removeItem(at: copy) }
        let alone = copy.appendingPathComponent("copy.sqlite").path
        try FileManager.default.copyItem(atPath: t.path, toPath: alone)
        #expect(try sqlite3(alone, "SELECT count(*), sum(budget) FROM Trip") == "500|124750.0")
    }
}
