package import Foundation

/// The wall clock as history timestamps show it.
package enum Timestamp {
    /// Now, as canonical UTC text with milliseconds.
    package static func now() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return format(epochMillis: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec / 1_000_000))
    }

    /// The milliseconds since 1970 of a canonical timestamp
    /// (`2026-01-02T03:04:05.678Z`); nil for other text.
    package static func epochMillis(_ text: String) -> Int64? {
        let u = Array(text.utf8)
        guard u.count == 24, u[4] == 45, u[7] == 45, u[10] == 84, u[13] == 58, u[16] == 58, u[19] == 46, u[23] == 90
        else { return nil }
        func n(_ r: Range<Int>) -> Int? { Int(String(decoding: u[r], as: UTF8.self)) }
        guard let y = n(0..<4), let m = n(5..<7), let d = n(8..<10), let h = n(11..<13), let mi = n(14..<16),
            let s = n(17..<19), let ms = n(20..<23)
        else { return nil }
        let days = Int64(DateValue.daysFromCivil(year: y, month: m, day: d))
        return ((days * 24 + Int64(h)) * 60 + Int64(mi)) * 60_000 + Int64(s) * 1000 + Int64(ms)
    }

    /// `date` as canonical UTC text, to the nearest millisecond (so that a
    /// date read from such text gives the same text back).
    package static func format(_ date: Date) -> String {
        format(epochMillis: Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    /// The moment a canonical timestamp names; nil for other text.
    package static func date(_ text: String) -> Date? {
        epochMillis(text).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    package static func format(epochMillis: Int64) -> String {
        let days = Int(epochMillis >= 0 ? epochMillis / 86_400_000 : (epochMillis - 86_399_999) / 86_400_000)
        let ms = Int(epochMillis - Int64(days) * 86_400_000)
        let (y, m, d) = DateValue.civilFromDays(days)
        let s = ms / 1000
        return DateValue.pad(y, 4) + "-" + DateValue.pad(m, 2) + "-" + DateValue.pad(d, 2) + "T"
            + DateValue.pad(s / 3600, 2) + ":" + DateValue.pad(s / 60 % 60, 2) + ":" + DateValue.pad(s % 60, 2)
            + "." + DateValue.pad(ms % 1000, 3) + "Z"
    }

    /// The canonical timestamp of `now` minus `age`; an age reaching back
    /// before 1970 gives 1970-01-01 (no history is older), never a trap.
    package static func ago(_ age: Duration) -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let now = Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec / 1_000_000)
        let (seconds, attos) = age.components
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow, seconds >= 0 else { return format(epochMillis: seconds < 0 ? now : 0) }
        return format(epochMillis: max(0, now - min(now, ms + attos / 1_000_000_000_000_000)))
    }
}
