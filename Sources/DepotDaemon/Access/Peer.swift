import Foundation

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
