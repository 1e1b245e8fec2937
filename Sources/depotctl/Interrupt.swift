import Foundation

/// Ctrl-C: live commands end cleanly (exit 0) after tidying the terminal.
enum Interrupt {
    nonisolated(unsafe) private static var source: (any DispatchSourceSignal)?

    static func onInterrupt(status: Int32 = 0, _ handler: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        let s = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        s.setEventHandler {
            handler()
            exit(status)
        }
        s.resume()
        source = s
    }
}
