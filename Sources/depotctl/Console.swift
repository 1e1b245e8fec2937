import ArgumentParser
import DepotClient
import Foundation

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

            The URL printed carries a token that is good once: the browser that opens \
            it gets a cookie for this bridge. Requests with another Host, without the \
            cookie, or (for a change) from another origin are refused. Ctrl-C stops \
            the bridge. With --json, the URL and who the daemon sees come as one line \
            of JSON ({"url", "uid", "user", "role"}).

            Example:
              depotctl console
              depotctl console --port 8410 --open
              ssh -L 8410:127.0.0.1:8410 server depotctl console --port 8410
            """)
    @OptionGroup var global: Global
    @Option(help: "The loopback port to listen on (default: a free one).")
    var port: Int = 0
    @Flag(help: "Open the URL in the desktop's browser (xdg-open).")
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
        if open {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["xdg-open", url]
            do { try process.run() } catch { Out.error("depotctl: cannot start a browser (xdg-open): \(error)") }
        }
        Interrupt.onInterrupt {}
        try await serve()
    }
}

/// What `depotctl console --json` prints once the bridge listens.
struct Opened: Encodable {
    var url: String
    var uid: Int
    var user: String?
    var role: String
}
