import CDepotSQLite
import Foundation

/// What Depot reads of files' status, through a C shim (see `depot_file_status`).
package enum FileIdentity {
    /// A file's status: device and inode, size, modification time, kind.
    package struct Status: Sendable, Hashable {
        package var device: Int64
        package var inode: Int64
        package var size: Int64
        /// Nanoseconds since the epoch.
        package var modified: Int64
        package var isRegular: Bool
        package var isSocket: Bool

        init(_ s: depot_file_status) {
            device = Int64(s.device)
            inode = Int64(s.inode)
            size = Int64(s.size)
            modified = Int64(s.modified_ns)
            isRegular = s.is_regular != 0
            isSocket = s.is_socket != 0
        }

        /// "DEV:INODE", as systemd writes `JOURNAL_STREAM`.
        package var identity: String { "\(device):\(inode)" }
    }

    /// The status of an open file; `nil` with `errno` set when it cannot be read.
    package static func status(of fd: Int32) -> Status? {
        var s = depot_file_status()
        return depot_fstat(fd, &s) == 0 ? Status(s) : nil
    }

    /// The status of the file at `path` (links followed); `nil` with `errno` set when it cannot be read.
    package static func status(atPath path: String) -> Status? {
        var s = depot_file_status()
        return depot_stat(path, &s) == 0 ? Status(s) : nil
    }

    /// "DEV:INODE" of standard error, as systemd writes `JOURNAL_STREAM`.
    package static var standardError: String? { status(of: 2)?.identity }
}
