import CSystemd
import DepotEngine
import Foundation
package import Logging

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
