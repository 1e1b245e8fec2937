import CSystemd
import Foundation
import Synchronization

/// The daemon's messages to systemd (`sd_notify`): `READY=1`, `STATUS=`,
/// `WATCHDOG=1`, `STOPPING=1`. Without `NOTIFY_SOCKET` each call does nothing.
package final class SystemdNotifier: Sendable {
    private let lastStatus = Mutex<(text: String, at: ContinuousClock.Instant?)>(("", nil))

    package init() {}

    @discardableResult
    func send(_ state: String) -> Bool { sd_notify(0, state) > 0 }

    package func ready() { send("READY=1") }
    package func stopping() { send("STOPPING=1") }
    package func reloading() { send("RELOADING=1") }
    package func watchdog() { send("WATCHDOG=1") }

    /// Sends `STATUS=` when the text changed, at most once a second.
    package func status(_ text: String) {
        let now = ContinuousClock.now
        let due = lastStatus.withLock { last -> Bool in
            if last.text == text { return false }
            if let at = last.at, now - at < .seconds(1) { return false }
            last = (text, now)
            return true
        }
        if due { send("STATUS=" + text.replacingOccurrences(of: "\n", with: " ")) }
    }

    /// Half the watchdog interval systemd asked for, if it asked.
    package var watchdogInterval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec / 2))
    }
}
