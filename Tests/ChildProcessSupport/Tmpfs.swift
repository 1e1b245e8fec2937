public import Foundation

/// A small tmpfs that a test mounts, to make a full disk real (root only:
/// tests that need one are skipped with a message elsewhere).
public enum Tmpfs {
    /// Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN).
    public static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        let probe = "/tmp/depot-mount-probe-\(getpid())"
        try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard mount(size: "1m", at: probe) else { return false }
        unmount(probe)
        return true
    }()

    /// Mounts a tmpfs of `size` (`"6m"`) on the folder `path`.
    @discardableResult
    public static func mount(size: String, at path: String) -> Bool {
        run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path]) == 0
    }

    /// Gives the tmpfs on `path` another size, keeping its files.
    @discardableResult
    public static func resize(_ path: String, to size: String) -> Bool {
        run("/bin/mount", ["-o", "remount,size=\(size)", path]) == 0
    }

    /// Unmounts the tmpfs on `path` (lazily: a file still open does not stop it).
    public static func unmount(_ path: String) { run("/bin/umount", ["-l", path]) }

    @discardableResult
    private static func run(_ tool: String, _ args: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return -1 }
        p.waitForExit()
        return p.exitStatus
    }
}
