import ArgumentParser
import DepotClient
import Foundation
import Synchronization

struct Console: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open Depot's console in a browser, as you.",
        discussion: """
            Listens on 127.0.0.1 (a free port, or --port) and forwards the browser's \
            requests to the daemon's socket from this process, so the daemon sees the \
            user who ran depotctl console and gives them their role: a read principal \
            sees the console without the controls that change data. The daemon serves \
            the console's pages itself (at /console/ on its socket) and opens no \
            listener of its own.

            The URL printed carries a token that is good once: the tab that opens it \
            gets a session of its own, which it keeps and sends with each request (no \
            cookie). Only your own user (and root) may connect to the bridge; another \
            user's connection is closed unread. Requests with another Host, without the \
            session, or (for a change) from another origin are refused. With --open the \
            browser is given a file only you can read, which leads to the URL: the token \
            is on no command line. Ctrl-C stops the bridge. With --json, the URL and who \
            the daemon sees come as one line of JSON ({"url", "uid", "user", "role"}).

            Example:
              depotctl console
              depotctl console --port 8410 --open
              ssh -L 8410:127.0.0.1:8410 server depotctl console --port 8410
            """)
    @OptionGroup var global: Global
    @Option(help: "The loopback port to listen on (default: a free one).")
    var port: Int = 0
    @Flag(help: "Open the console in the desktop's browser (xdg-open, through a file only you can read).")
    var open = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
    }

    func execute(_ client: DaemonClient) async throws {
        // The daemon first: who it sees, so that a bridge to nothing or to a
        // refusal says so at once.
        let me = try await client.me()
        let bridge = ConsoleBridge(socketPath: global.socketPath)
        let (bound, serve): (Int, @Sendable () async throws -> Void)
        do {
            (bound, serve) = try await bridge.start(port: port)
        } catch {
            throw Failure("cannot listen on 127.0.0.1:\(port): \(error)")
        }
        let url = "http://127.0.0.1:\(bound)/console/?token=\(bridge.token)"
        let who = me.user ?? "uid \(me.uid)"
        if global.json {
            try Out.json(Opened(url: url, uid: me.uid, user: me.user, role: me.role))
        } else {
            Out.line("Depot console for \(who) (\(me.role)), until Ctrl-C:")
            Out.line(url)
        }
        var launcher: LaunchPage?
        if open {
            // The browser gets a file, not the URL: a command line is
            // readable by every user (/proc/PID/cmdline), the file by you
            // alone, and it is removed once the token is used.
            do {
                let page = try LaunchPage(url: url)
                launcher = page
                bridge.onExchange.withLock { $0 = { page.remove() } }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["xdg-open", page.path]
                try process.run()
            } catch {
                Out.error("depotctl: cannot start a browser (xdg-open): \(error)")
            }
        }
        let page = launcher
        defer { page?.remove() }
        Interrupt.onInterrupt { page?.remove() }
        try await serve()
    }
}

/// A page that sends the browser on to the console's URL, in a folder of
/// its own that only this user can enter (`$XDG_RUNTIME_DIR` when there is
/// one), readable by this user only.
final class LaunchPage: Sendable {
    let folder: String
    var path: String { folder + "/console.html" }

    init(url: String) throws {
        let base = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/depot-console-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Failure("cannot make a private folder in \(base): \(String(cString: strerror(errno)))")
        }
        folder = String(cString: made)
        chmod(folder, 0o700)
        let html = """
            <!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">
            <meta http-equiv="refresh" content="0;url=\(url)">
            <title>Depot console</title><a href="\(url)">Open the Depot console</a>
            """
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(html.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            throw Failure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes the page and its folder (once the token is used, or at exit).
    func remove() {
        unlink(path)
        rmdir(folder)
    }
}

/// What `depotctl console --json` prints once the bridge listens.
struct Opened: Encodable {
    var url: String
    var uid: Int
    var user: String?
    var role: String
}
