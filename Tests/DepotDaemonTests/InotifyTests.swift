import Foundation
import Testing

@testable import DepotDaemon

@Suite("inotify events")
struct InotifyTests {
    /// One `struct inotify_event` as the kernel lays it out.
    static func event(watch: Int32, mask: UInt32, name: String, padTo: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: watch.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: mask.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(0)) { bytes += $0 }
        withUnsafeBytes(of: UInt32(padTo).littleEndian) { bytes += $0 }
        var name = Array(name.utf8)
        name += [UInt8](repeating: 0, count: padTo - name.count)
        return bytes + name
    }

    @Test("a read's events parse by offset, names NUL-padded, overflow seen")
    func parse() {
        let bytes =
            Self.event(watch: 3, mask: UInt32(IN_CLOSE_WRITE), name: "trips.csv", padTo: 16)
            + Self.event(watch: 4, mask: UInt32(IN_MOVED_TO), name: "été.ndjson", padTo: 32)
            + Self.event(watch: -1, mask: UInt32(IN_Q_OVERFLOW), name: "", padTo: 0)
        let events = Inotify.Event.parse(bytes)
        #expect(
            events == [
                Inotify.Event(
                    watch: 3, mask: UInt32(IN_CLOSE_WRITE), name: "trips.csv", bytes: Array("trips.csv".utf8)),
                Inotify.Event(watch: 4, mask: UInt32(IN_MOVED_TO), name: "été.ndjson", bytes: Array("été.ndjson".utf8)),
                Inotify.Event(watch: -1, mask: UInt32(IN_Q_OVERFLOW), name: "", bytes: [])
            ])
        #expect(events.map(\.overflowed) == [false, false, true])
        // A truncated read (never from the kernel) is not read past its end.
        #expect(Inotify.Event.parse(Array(bytes.prefix(20))).count == 1)
        #expect(Inotify.Event.parse(Array(bytes.prefix(10))).isEmpty)
    }
}
