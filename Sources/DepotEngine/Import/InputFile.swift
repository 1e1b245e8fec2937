import Foundation

/// A file read sequentially in large chunks from a byte offset.
///
/// Hand-written on `read(2)` rather than `FileHandle` so that readers reuse
/// one buffer and never allocate per chunk.
final class InputFile {
    let path: String
    private let fd: Int32
    /// The file's size when it was opened.
    let size: Int64
    /// The file's modification time when it was opened, in nanoseconds since the epoch.
    let modified: Int64

    /// Opens `path` for reading at `offset`.
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` saying why the file cannot be read.
    init(path: String, offset: Int64 = 0) throws {
        self.path = path
        // O_NONBLOCK: a FIFO is refused below instead of waiting for a writer.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw DepotError(.invalidArgument, "cannot read \(path): \(reason)")
        }
        guard let status = FileIdentity.status(of: fd), status.isRegular else {
            close(fd)
            throw DepotError(.invalidArgument, "cannot read \(path): not a regular file")
        }
        self.fd = fd
        self.size = status.size
        self.modified = status.modified
        if offset > 0, lseek(fd, off_t(offset), SEEK_SET) < 0 {
            close(fd)
            throw DepotError(.invalidArgument, "cannot read \(path) from byte \(offset): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    /// Reads up to `count` bytes into `buffer`; 0 at the end of the file.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        while true {
            let n = Foundation.read(fd, buffer, count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw DepotError(.invalidArgument, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Slides the unconsumed bytes `buffer[begin..<end]` to the front
    /// (advancing `bufferOffset`, the file offset of `buffer[0]`), doubles
    /// the buffer when one record fills it, and reads more after them.
    ///
    /// - Returns: whether the end of the file was reached.
    func refill(_ buffer: inout UnsafeMutableRawBufferPointer, begin: inout Int, end: inout Int,
                bufferOffset: inout Int64) throws -> Bool {
        if begin > 0 {
            let count = end - begin
            if count > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + begin, byteCount: count) }
            bufferOffset += Int64(begin)
            end = count
            begin = 0
        }
        if end == buffer.count {
            let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 16)
            bigger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: end)
            buffer.deallocate()
            buffer = bigger
        }
        let n = try read(into: buffer.baseAddress! + end, count: buffer.count - end)
        end += n
        return n == 0
    }

    /// A byte count as people read it: "64 MiB", "1 KiB", "100 bytes".
    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
