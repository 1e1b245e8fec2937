import Foundation
import NIOCore

/// `SO_PEERCRED` on a connected Unix socket, read through NIO's socket
/// option API into a mirror of `struct ucred` (which Glibc hides behind
/// `_GNU_SOURCE`).
enum PeerCredentials {
    struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    static func read(_ channel: any Channel) async throws -> Peer {
        guard let provider = channel as? any SocketOptionProvider else {
            // An in-process (embedded) channel: the daemon's own user.
            return Peer(pid: getpid(), uid: getuid(), gid: getgid())
        }
        let cred: UCred = try await provider.unsafeGetSocketOption(
            level: NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET),
            name: NIOBSDSocket.Option(rawValue: SO_PEERCRED)
        ).get()
        return Peer(pid: cred.pid, uid: cred.uid, gid: cred.gid)
    }
}
