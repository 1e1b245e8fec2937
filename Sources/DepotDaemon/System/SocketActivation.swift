import CSystemd
import Foundation

/// Sockets handed in by systemd socket activation (`sd_listen_fds`).
package enum SocketActivation {
    /// The first inherited listening socket's descriptor, if any.
    package static func inheritedSocket() -> Int32? {
        let n = sd_listen_fds(1)
        guard n >= 1 else { return nil }
        return SD_LISTEN_FDS_START
    }
}
