import DepotClient
import Foundation

/// Writes to stdout and stderr without Foundation's buffering surprises.
enum Out {
    /// A wire value as one line of JSON, as the daemon sends it (``WireJSON``).
    static func json(_ value: some Encodable) throws {
        line(String(decoding: try WireJSON.encoder.encode(value), as: UTF8.self))
    }

    static func line(_ text: String = "") { write(1, text + "\n") }
    static func error(_ text: String) { write(2, text + "\n") }

    static func write(_ fd: Int32, _ text: String) {
        write(fd, Array(text.utf8))
    }

    /// Writes all of `bytes`; false when the descriptor refuses (a closed pipe, a full disk).
    @discardableResult
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buf in
            var done = 0
            while done < buf.count {
                let n = Foundation.write(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
    }
}
