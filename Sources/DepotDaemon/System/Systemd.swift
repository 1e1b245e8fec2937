import CSystemd
package import DepotEngine
import Foundation
package import Logging
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

/// Sockets handed in by systemd socket activation (`sd_listen_fds`).
package enum SocketActivation {
    /// The first inherited listening socket's descriptor, if any.
    package static func inheritedSocket() -> Int32? {
        let n = sd_listen_fds(1)
        guard n >= 1 else { return nil }
        return SD_LISTEN_FDS_START
    }
}

/// A swift-log handler for a service: structured journal entries (with
/// `STORE=`, `JOB_ID=`, `ENTITY=` fields from the metadata) when stderr is
/// connected to the journal, else lines on stderr with `<N>` priority
/// prefixes, which journald also understands.
package struct ServiceLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level
    private let label: String
    private let journal: Bool

    package init(label: String, level: Logger.Level, journal: Bool = ServiceLogHandler.journalIsThere) {
        self.label = label
        self.logLevel = level
        self.journal = journal
    }

    /// Whether stderr is a journal stream (systemd sets `JOURNAL_STREAM`).
    package static var journalIsThere: Bool {
        guard let stream = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        return stream == FileIdentity.standardError
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    package func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let priority = Self.priority(event.level)
        if journal {
            var fields = ["MESSAGE=\(event.message)", "PRIORITY=\(priority)", "SYSLOG_IDENTIFIER=depotd"]
            for (key, value) in all.sorted(by: { $0.key < $1.key }) {
                let name = key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
                fields.append("\(String(name))=\(value)")
            }
            Self.sendJournal(fields)
            return
        }
        var line = "<\(priority)>\(event.message)"
        if !all.isEmpty {
            line += " " + all.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        line += "\n"
        line.withUTF8 { buf in _ = write(2, buf.baseAddress, buf.count) }
    }

    /// `sd_journal_sendv` with one iovec per field (binary-safe; the variadic
    /// `sd_journal_send` is not callable from Swift).
    static func sendJournal(_ fields: [String]) {
        let buffers = fields.map { Array($0.utf8) }
        var storage = buffers.map { bytes -> UnsafeMutableRawPointer in
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
            bytes.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            return p
        }
        defer { storage.forEach { $0.deallocate() }; storage.removeAll() }
        var vectors = zip(storage, buffers).map { iovec(iov_base: $0.0, iov_len: $0.1.count) }
        _ = sd_journal_sendv(&vectors, Int32(vectors.count))
    }
}
