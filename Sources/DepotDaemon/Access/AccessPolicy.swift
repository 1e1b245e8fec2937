import Foundation

/// The `[access]` rules: read and write principals; root and the daemon's
/// own user always write.
package struct AccessPolicy: Sendable {
    package var read: [Principal]
    package var write: [Principal]
    let ownUID: UInt32

    package init(read: [Principal], write: [Principal], ownUID: UInt32 = getuid()) {
        self.read = read
        self.write = write
        self.ownUID = ownUID
    }

    func matches(_ principal: Principal, _ peer: Peer) -> Bool {
        switch principal {
        case .uid(let n): return peer.uid == n
        case .user(let name):
            let uid: uid_t? = UserDatabase.lock.withLock { getpwnam(name).map { $0.pointee.pw_uid } }
            return uid == peer.uid
        case .group(let name):
            let gid: gid_t? = UserDatabase.lock.withLock { getgrnam(name).map { $0.pointee.gr_gid } }
            guard let gid else { return false }
            return peer.groups.contains(gid)
        }
    }

    /// Whether `peer` has `role`.
    package func allows(_ peer: Peer, _ role: Role) -> Bool {
        if peer.uid == 0 || peer.uid == ownUID { return true }
        if write.contains(where: { matches($0, peer) }) { return true }
        return role == .read && read.contains(where: { matches($0, peer) })
    }

    /// The message of a refusal: who asked, what was needed, and who has it.
    package func refusal(_ peer: Peer, _ role: Role) -> String {
        let principals = role == .read ? read + write : write
        let who =
            principals.isEmpty
            ? "only root and the daemon's own user"
            : principals.map(\.description).joined(separator: ", ") + ", root and the daemon's own user"
        return "\(peer.description) may not \(role == .read ? "read" : "write"): the \(role.rawValue) role is needed, "
            + "which [access] gives to \(who)"
    }
}
