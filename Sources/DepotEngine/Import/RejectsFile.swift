import Foundation

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
        guard fd >= 0 else { throw DepotError.io("cannot write the rejects file \(path)", errno: errno) }
        self.fd = fd
        guard ftruncate(fd, off_t(length)) == 0, lseek(fd, off_t(length), SEEK_SET) >= 0 else {
            let code = errno
            close(fd)
            throw DepotError.io("cannot write the rejects file \(path)", errno: code)
        }
        self.length = length
    }

    deinit { close(fd) }

    /// One line of the file and the input line of the record it lists, by
    /// which a save orders its rejects.
    struct Entry: Sendable {
        var line: Int
        var text: String
    }

    /// Appends lines and flushes them to disk, before the save that counts them commits.
    func append(_ lines: [String]) throws {
        guard !lines.isEmpty else { return }
        var text = lines.joined(separator: "\n")
        text.append("\n")
        try text.withUTF8 { buf in
            // `disk_full` when there is no room: the save that counts these
            // lines then fails whole, and the job resumes from its last save.
            if let code = FileOutput.write(fd, UnsafeRawBufferPointer(buf)) {
                throw DepotError.io("cannot write the rejects file \(path)", errno: code)
            }
            length += Int64(buf.count)
        }
        guard fsync(fd) == 0 else { throw DepotError.io("cannot write the rejects file \(path)", errno: errno) }
    }

    /// The line of a value that does not convert to its field's type.
    static func line(_ line: Int, field: Field, failure: FieldParser.Failure, value: String?) -> String {
        self.line(
            line, field: field.name,
            reason: "field \(JSONText.quoted(field.name)) is \(field.type.rawValue), "
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
