import DepotEngine
import Foundation
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// One inotify instance, read as an async sequence of events through
/// SwiftNIO (its pipe channel on the event loop: no thread, no polling).
///
/// Watches may be added before or while the events are read; events wait in
/// the kernel until they are.
final class Inotify: Sendable {
    /// One `struct inotify_event`.
    struct Event: Sendable, Equatable {
        var watch: Int32
        var mask: UInt32
        var name: String
        /// The name's bytes as the kernel gave them (a name need not be UTF-8).
        var bytes: [UInt8] = []

        /// The kernel's queue overflowed: events were lost, rescan.
        var overflowed: Bool { mask & UInt32(IN_Q_OVERFLOW) != 0 }

        /// The events of one `read` of an inotify descriptor, which returns
        /// whole events only: `wd`@0, `mask`@4, `cookie`@8, `len`@12, then
        /// `len` bytes of NUL-padded name (LINUX-NOTES.md).
        static func parse(_ bytes: [UInt8]) -> [Event] {
            var events: [Event] = []
            var offset = 0
            func word<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
                bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: T.self) }
            }
            while offset + 16 <= bytes.count {
                let length = Int(word(offset + 12, UInt32.self))
                let end = min(bytes.count, offset + 16 + length)
                let name = bytes[(offset + 16)..<end].prefix { $0 != 0 }
                events.append(
                    Event(
                        watch: word(offset, Int32.self), mask: word(offset + 4, UInt32.self),
                        name: String(decoding: name, as: UTF8.self), bytes: Array(name)))
                offset += 16 + length
            }
            return events
        }
    }

    private let descriptor: Int32
    /// Set once the reading ended and NIO closed the descriptor, whose
    /// number the process may then reuse for another file.
    private let closed = Mutex(false)

    init() throws {
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else {
            throw DepotError(.invalidArgument, "inotify is not available: \(String(cString: strerror(errno)))")
        }
    }

    /// Watches a folder for files written and closed or moved in.
    func add(_ path: String) throws -> Int32 {
        try closed.withLock { closed in
            guard !closed else { throw DepotError(.storeClosed, "the daemon is stopping and watches no new folders") }
            return try addWatch(path)
        }
    }

    /// Stops watching a folder (a reload that did not go through).
    func remove(_ watch: Int32) {
        closed.withLock { closed in
            if !closed { _ = inotify_rm_watch(descriptor, watch) }
        }
    }

    private func addWatch(_ path: String) throws -> Int32 {
        let watch = inotify_add_watch(descriptor, path, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO))
        guard watch >= 0 else {
            throw DepotError(.invalidArgument, "cannot watch \(path): \(String(cString: strerror(errno)))")
        }
        return watch
    }

    /// Reads the events, in order, until the daemon shuts down gracefully;
    /// the descriptor is closed at the end. Call once.
    func read(_ body: @Sendable ([Event]) async throws -> Void) async throws {
        let channel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // A buffer smaller than one event makes read() fail with EINVAL,
            // which NIO treats as fatal: a fixed 64 KiB (LINUX-NOTES.md).
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
            .takingOwnershipOfDescriptor(input: descriptor) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, Never>(wrappingChannelSynchronously: channel)
                }
            }
        defer { closed.withLock { $0 = true } }
        try await channel.executeThenClose { inbound, _ in
            for try await buffer in inbound.cancelOnGracefulShutdown() {
                try await body(Event.parse(Array(buffer.readableBytesView)))
            }
        }
    }
}
