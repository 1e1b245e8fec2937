import Foundation

/// Where an import stands after a save: committed in the same transaction as
/// the save's records, so a restarted job resumes exactly there.
struct ImportCheckpoint: Codable, Sendable {
    var fingerprint: InputFingerprint
    /// The byte offset of the first record not yet saved.
    var offset: Int64
    /// The line on which that record starts.
    var line: Int
    /// The file offset where that line starts (JSON errors give columns);
    /// `nil` in checkpoints written before it was kept: then `offset`.
    var lineStart: Int64?
    /// The rejects file's length after the save.
    var rejectsLength: Int64
    /// The entity's greatest rowid when the job started: rows above it came
    /// from this job's input, so meeting one again is an in-file duplicate.
    var rowidFloor: Int64
    var progress: ImportProgress

    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    static func decode(_ bytes: [UInt8]) -> ImportCheckpoint? {
        try? JSONDecoder().decode(ImportCheckpoint.self, from: Data(bytes))
    }
}

/// What identifies an input's content cheaply: its size, its modification
/// time and a hash of its first 64 KiB.
struct InputFingerprint: Codable, Sendable, Hashable {
    var size: Int64
    var modified: Int64
    var headHash: UInt64

    init(path: String) throws {
        let file = try InputFile(path: path)
        size = file.size
        modified = file.modified
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer { buffer.deallocate() }
        var total = 0
        while total < buffer.count {
            let n = try file.read(into: buffer.baseAddress! + total, count: buffer.count - total)
            if n == 0 { break }
            total += n
        }
        for byte in buffer[0..<total] { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        headHash = hash
    }
}

/// The rejects file of a job: one JSON object per rejected record, with its
/// line, field and reason.
///
/// Written only inside saves, and cut back to the checkpoint's length when a
/// job resumes, so a record is never listed twice.
final class RejectsFile: @unchecked Sendable {
    // Safe without a lock: used by one import at a time, and written only
    // inside that import's saves, which the store runs one after another.
    private let fd: Int32
    let path: String
    private(set) var length: Int64

    init(path: String, truncateTo length: Int64) throws {
        self.path = path
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else {
            throw DepotError(.invalidArgument, "cannot write the rejects file \(path): \(String(cString: strerror(errno)))")
        }
        self.fd = fd
        guard ftruncate(fd, off_t(length)) == 0, lseek(fd, off_t(length), SEEK_SET) >= 0 else {
            close(fd)
            throw DepotError(.invalidArgument, "cannot write the rejects file \(path): \(String(cString: strerror(errno)))")
        }
        self.length = length
    }

    deinit { close(fd) }

    /// Appends lines and flushes them to disk, before the save that counts them commits.
    func append(_ lines: [String]) throws {
        guard !lines.isEmpty else { return }
        var text = lines.joined(separator: "\n")
        text.append("\n")
        try text.withUTF8 { buf in
            if let reason = FileOutput.writeAll(fd, UnsafeRawBufferPointer(buf)) {
                throw DepotError(.database, "cannot write the rejects file \(path): \(reason)")
            }
            length += Int64(buf.count)
        }
        guard fsync(fd) == 0 else {
            throw DepotError(.database, "cannot write the rejects file \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The line of a value that does not convert to its field's type.
    static func line(_ line: Int, field: Field, failure: FieldParser.Failure, value: String?) -> String {
        self.line(line, field: field.name, reason: "field \(JSONText.quoted(field.name)) is \(field.type.rawValue), "
            + "but the value " + failure.reason, value: value)
    }

    static func line(_ line: Int, field: String?, reason: String, value: String?) -> String {
        var out = "{\"line\":\(line),\"field\":"
        if let field { JSONText.appendQuoted(field, to: &out) } else { out += "null" }
        out += ",\"reason\":"
        JSONText.appendQuoted(reason, to: &out)
        if let value {
            out += ",\"value\":"
            JSONText.appendQuoted(value, to: &out)
        }
        out += "}"
        return out
    }
}

/// Writing to file descriptors.
package enum FileOutput {
    /// Writes all of `bytes` to `fd`, retrying after interruptions.
    ///
    /// - Returns: `nil`, or why the write failed.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> String? {
        write(fd, bytes).map { String(cString: strerror($0)) }
    }

    /// Writes all of `bytes` to `fd`, retrying after interruptions.
    ///
    /// - Returns: `nil`, or the `errno` of the failed write.
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var done = 0
        while done < bytes.count {
            let n = Foundation.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return nil
    }
}
