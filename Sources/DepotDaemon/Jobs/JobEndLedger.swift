import Foundation
import Synchronization

/// The ends of jobs that their store could not record (issue #35, item 3).
///
/// A job's end is written to its store before it shows. When that write
/// fails (a full disk, a failed `fsync`), the store still holds the job as
/// `running`, and the next start would resume it, after newer saves, over
/// newer data. So the end goes here instead: a small file in `state_dir`
/// whose space is allocated when the daemon starts, so that writing an entry
/// needs no new block on a full disk. At the next start, a job found
/// unfinished in its store with an entry here takes the entry's state
/// (never resumes), and the entry is cleared once the store recorded it;
/// while the daemon runs, the store is asked again before its next write.
///
/// Written by hand: a fixed array of 256 slots of 256 bytes, each
/// `store TAB id TAB state TAB reason`, NUL-padded, or all NUL when free.
final class JobEndLedger: Sendable {
    struct Entry: Sendable, Equatable {
        var slot: Int
        var store: String
        var id: String
        var state: String
        var reason: String
    }

    static let slotSize = 256
    static let slotCount = 256
    let path: String
    /// The open file (or -1); guarded, since writes pick a free slot.
    private let fd: Mutex<Int32>

    init(stateDir: String) {
        path = stateDir + "/job-ends"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 {
            // Reserved now, while there is room: a later write only fills it.
            let size = off_t(Self.slotSize * Self.slotCount)
            if posix_fallocate(fd, 0, size) != 0 { _ = ftruncate(fd, size) }
        }
        self.fd = Mutex(fd)
    }

    deinit { fd.withLock { if $0 >= 0 { close($0) } } }

    /// Whether the file could be opened and its space reserved.
    var isUsable: Bool {
        fd.withLock { fd in
            // Its size (reads and writes are positioned: the offset is free).
            fd >= 0 && lseek(fd, 0, SEEK_END) >= off_t(Self.slotSize * Self.slotCount)
        }
    }

    /// Every entry in the file.
    func entries() -> [Entry] {
        fd.withLock { fd in
            guard fd >= 0 else { return [] }
            var out: [Entry] = []
            var slot = [UInt8](repeating: 0, count: Self.slotSize)
            for i in 0..<Self.slotCount {
                let n = slot.withUnsafeMutableBytes {
                    pread(fd, $0.baseAddress, Self.slotSize, off_t(i * Self.slotSize))
                }
                guard n == Self.slotSize, slot[0] != 0 else { continue }
                let text = String(decoding: slot.prefix { $0 != 0 }, as: UTF8.self)
                let parts = text.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 4 else { continue }
                out.append(Entry(slot: i, store: parts[0], id: parts[1], state: parts[2], reason: parts[3]))
            }
            return out
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Writes an entry in a free slot, synced; its slot.
    func record(store: String, id: String, state: String, reason: String) throws -> Int {
        let clean = { (s: String) in
            s.replacingOccurrences(of: "\t", with: " ").replacingOccurrences(of: "\0", with: " ")
        }
        var bytes = Array((clean(store) + "\t" + clean(id) + "\t" + state + "\t").utf8)
        guard bytes.count < Self.slotSize - 1 else { throw Failure(description: "the job's store and id are too long") }
        // The reason, cut to fit on a character boundary.
        var reason = Substring(clean(reason))
        while bytes.count + reason.utf8.count > Self.slotSize - 1 { reason = reason.dropLast() }
        bytes += reason.utf8
        bytes += [UInt8](repeating: 0, count: Self.slotSize - bytes.count)
        let taken = Set(entries().map(\.slot))
        return try fd.withLock { fd in
            guard fd >= 0 else { throw Failure(description: "\(path) could not be opened") }
            guard let slot = (0..<Self.slotCount).first(where: { !taken.contains($0) }) else {
                throw Failure(description: "\(path) is full")
            }
            try Self.write(fd, bytes, slot: slot, path: path)
            return slot
        }
    }

    /// Frees `slot`, once the store recorded its job's end.
    func clear(slot: Int) {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            try? Self.write(fd, [UInt8](repeating: 0, count: Self.slotSize), slot: slot, path: path)
        }
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8], slot: Int, path: String) throws {
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, slotSize, off_t(slot * slotSize)) }
        guard n == slotSize else {
            throw Failure(description: "cannot write \(path): \(String(cString: strerror(n < 0 ? errno : EIO)))")
        }
        guard fdatasync(fd) == 0 else {
            throw Failure(description: "cannot sync \(path): \(String(cString: strerror(errno)))")
        }
    }
}
