import Foundation
import Synchronization

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
        let (fd, status) = try SafeFile.openForReading(path)
        self.fd = fd
        self.size = status.size
        self.modified = status.modified
        if offset > 0, lseek(fd, off_t(offset), SEEK_SET) < 0 {
            close(fd)
            throw DepotError.io("cannot read \(path) from byte \(offset)", errno: errno)
        }
    }

    deinit { close(fd) }

    /// Reads up to `count` bytes into `buffer`; 0 at the end of the file.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        while true {
            let n = Foundation.read(fd, buffer, count)
            if n == 0 {
                // The end: the file must be as it was when it was opened,
                // or what was read is not one version of it (issue #35: a
                // file truncated mid-import ended with a third of its rows).
                if let now = FileIdentity.status(of: fd), now.size != size || now.modified != modified {
                    throw DepotError(
                        .invalidArgument,
                        "the file changed while it was imported: \(path) "
                            + "(\(size) bytes when the import began, \(now.size) now); write files elsewhere and "
                            + "move them in whole, then import again")
                }
            }
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw DepotError.io("cannot read \(path)", errno: errno)
        }
    }

    /// Slides the unconsumed bytes `buffer[begin..<end]` to the front
    /// (advancing `bufferOffset`, the file offset of `buffer[0]`), doubles
    /// the buffer when one record fills it, and reads more after them.
    ///
    /// - Returns: whether the end of the file was reached.
    func refill(
        _ buffer: inout UnsafeMutableRawBufferPointer, begin: inout Int, end: inout Int,
        bufferOffset: inout Int64
    ) throws -> Bool {
        if begin > 0 {
            let count = end - begin
            if count > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + begin, byteCount: count) }
            bufferOffset += Int64(begin)
            end = count
            begin = 0
        }
        if end == buffer.count {
            let bigger = InputFile.allocate(buffer.count * 2)
            bigger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: end)
            buffer.deallocate()
            buffer = bigger
        }
        let n = try read(into: buffer.baseAddress! + end, count: buffer.count - end)
        end += n
        return n == 0
    }

    /// A reader's buffer. In debug and fuzzing builds its bytes are filled
    /// with a value that changes with every buffer, so that a reader that
    /// looks at bytes it never read (past `end`, before a refill) reads
    /// differently each time, and a fuzz target's "the same twice"
    /// invariant shows it (CI's FuzzInfer finding of 2026-11-29: one file
    /// inferred twice, differently).
    static func allocate(_ count: Int) -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        #if DEBUG || FUZZING
        buffer.initializeMemory(as: UInt8.self, repeating: poison.wrappingAdd(37, ordering: .relaxed).newValue)
        #endif
        return buffer
    }

    #if DEBUG || FUZZING
    private static let poison = Atomic<UInt8>(0)
    #endif

    /// A byte count as people read it: "64 MiB", "1 KiB", "100 bytes".
    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}

/// Opening files a client names (issue #35): the daemon reads only regular
/// files, never through a symbolic link, and never waits on a FIFO or a
/// device.
package enum SafeFile {
    /// Opens `path` to read: not through a link in its last component
    /// (`O_NOFOLLOW`; the daemon resolves links when the path is given, so a
    /// link found now was put there since), without waiting (`O_NONBLOCK`),
    /// and only a regular file (`fstat`).
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` saying why.
    package static func openForReading(_ path: String) throws -> (fd: Int32, status: FileIdentity.Status) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ELOOP:
                throw DepotError(
                    .invalidArgument, "cannot read \(path): it is a symbolic link; name the file it points to")
            // The path names no file: the caller's to fix.
            case ENOENT, ENOTDIR, ENAMETOOLONG:
                throw DepotError(.invalidArgument, "cannot read \(path): \(String(cString: strerror(code)))")
            // A file there that cannot be opened (a permission, an I/O error).
            default: throw DepotError.io("cannot read \(path)", errno: code)
            }
        }
        guard let status = FileIdentity.status(of: fd), status.isRegular else {
            close(fd)
            throw DepotError(.invalidArgument, "cannot read \(path): not a regular file")
        }
        return (fd, status)
    }
}
