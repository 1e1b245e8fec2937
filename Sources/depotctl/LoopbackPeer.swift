import Foundation
import NIOCore

/// The user behind a loopback TCP connection, read from the kernel's table
/// of TCP sockets (`/proc/net/tcp`) as identd reads it: the peer's socket
/// is the entry whose local address is the connection's remote one and
/// whose remote address is the connection's local one; its `uid` column
/// is the user who opened it.
///
/// Written by hand: no package here reads that table, and it is the whole
/// of what the console's bridge needs to serve one user only (issue 51).
enum LoopbackPeer {
    /// Whether `channel`'s peer is the user running this process, or root
    /// (who can read any process's memory, and so gains nothing here).
    /// False when the peer cannot be found (it has gone already).
    static func isOwner(of channel: any Channel) -> Bool {
        guard let uid = uid(of: channel) else { return false }
        return uid == getuid() || uid == 0
    }

    /// The uid of `channel`'s peer, if it is a loopback TCP socket of this host.
    static func uid(of channel: any Channel) -> uid_t? {
        guard let remote = channel.remoteAddress, let local = channel.localAddress,
            let remoteIP = remote.ipAddress, let localIP = local.ipAddress,
            let remotePort = remote.port, let localPort = local.port,
            let table = procFile("/proc/net/tcp")
        else { return nil }
        return uid(in: table, peer: (remoteIP, remotePort), ours: (localIP, localPort))
    }

    /// A file of /proc read to its end: its size says 0, so it is read in
    /// blocks until `read` returns nothing (Foundation's readers of a whole
    /// file trust the size, and read nothing).
    static func procFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var block = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = block.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += block[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The uid of the entry of `table` (the text of `/proc/net/tcp`) whose
    /// local address is `peer` and whose remote address is `ours`.
    static func uid(in table: String, peer: (String, Int), ours: (String, Int)) -> uid_t? {
        for line in table.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard columns.count > 7, let local = address(columns[1]), let remote = address(columns[2]),
                local == peer.0 + ":" + String(peer.1), remote == ours.0 + ":" + String(ours.1)
            else { continue }
            return uid_t(columns[7])
        }
        return nil
    }

    /// `0100007F:1F90` as `127.0.0.1:8080` (the address is the kernel's
    /// 32-bit value in host order, little-endian here; the port is big-endian hex).
    static func address(_ text: Substring) -> String? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 8, let v = UInt32(parts[0], radix: 16),
            let port = UInt16(parts[1], radix: 16)
        else { return nil }
        let bytes = [v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, v >> 24]
        return bytes.map(String.init).joined(separator: ".") + ":" + String(port)
    }
}
