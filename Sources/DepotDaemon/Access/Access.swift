import Foundation

/// Who may read or write, as the `[access]` section names them:
/// `uid:N`, `user:NAME` or `group:NAME`.
package enum Principal: Sendable, Hashable, CustomStringConvertible {
    case uid(UInt32)
    case user(String)
    case group(String)

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    package init(parsing text: String) throws {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty else {
            throw Invalid(description: "\(text.debugDescription) is not a principal; write uid:N, user:NAME or group:NAME")
        }
        switch parts[0] {
        case "uid":
            guard let n = UInt32(parts[1]) else { throw Invalid(description: "\(text.debugDescription): uid must be a number") }
            self = .uid(n)
        case "user": self = .user(parts[1])
        case "group": self = .group(parts[1])
        default:
            throw Invalid(description: "\(text.debugDescription) is not a principal; write uid:N, user:NAME or group:NAME")
        }
    }

    package var description: String {
        switch self {
        case .uid(let n): "uid:\(n)"
        case .user(let name): "user:\(name)"
        case .group(let name): "group:\(name)"
        }
    }
}

/// A connected client's identity, read from its socket with `SO_PEERCRED`.
package struct Peer: Sendable, Hashable {
    package var pid: Int32
    package var uid: UInt32
    package var gid: UInt32

    package init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The peer's user name, when the system knows it.
    package var userName: String? {
        UserDatabase.lock.withLock {
            guard let pw = getpwuid(uid) else { return nil }
            return String(cString: pw.pointee.pw_name)
        }
    }

    /// The peer's primary and supplementary groups.
    var groups: Set<UInt32> {
        UserDatabase.lock.withLock { groupsLocked }
    }

    private var groupsLocked: Set<UInt32> {
        var result: Set<UInt32> = [gid]
        guard let pw = getpwuid(uid) else { return result }
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(pw.pointee.pw_name, gid, &list, &count) == -1 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(pw.pointee.pw_name, gid, &list, &count)
        }
        for g in list.prefix(Int(max(0, count))) { result.insert(g) }
        return result
    }

    package var description: String { "uid \(uid)" + (userName.map { " (\($0))" } ?? "") }
}

/// What a request needs.
package enum Role: String, Sendable {
    case read, write
}

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
        let who = principals.isEmpty ? "only root and the daemon's own user"
            : principals.map(\.description).joined(separator: ", ") + ", root and the daemon's own user"
        return "\(peer.description) may not \(role == .read ? "read" : "write"): the \(role.rawValue) role is needed, "
            + "which [access] gives to \(who)"
    }
}

/// getpwuid, getpwnam and getgrnam return static buffers: one caller at a time.
enum UserDatabase {
    static let lock = NSLock()
}
