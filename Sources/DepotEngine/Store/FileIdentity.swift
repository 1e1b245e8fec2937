import Foundation

/// Identities of open files.
package enum FileIdentity {
    /// "DEV:INODE" of standard error, as systemd writes `JOURNAL_STREAM`.
    package static var standardError: String? {
        var st = stat()
        guard fstat(2, &st) == 0 else { return nil }
        return "\(st.st_dev):\(st.st_ino)"
    }
}
