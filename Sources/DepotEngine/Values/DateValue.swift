/// Parses ISO 8601 dates and date-times and writes them in the engine's
/// canonical form.
///
/// Canonical forms sort as text in time order:
/// - a calendar date stays a date: `2025-03-14`;
/// - a date-time becomes UTC with milliseconds: `2025-03-14T09:30:00.000Z`
///   (`2025-03-14T10:30:00+01:00` is stored so).
///
/// A date-time without an offset is taken as UTC. Hand-written because it
/// runs once per date value of every imported row, where `ISO8601DateFormatter`
/// costs microseconds and allocations.
///
/// For example:
///
/// ```swift
/// DateValue.canonical("2025-03-14T10:30:00+01:00") // "2025-03-14T09:30:00.000Z"
/// DateValue.canonical("2025-02-30")                // nil: no such day
/// ```
public enum DateValue {
    /// The canonical text of an ISO 8601 date or date-time, or `nil` when
    /// `text` is not one.
    public static func canonical(_ text: String) -> String? {
        var copy = text
        return copy.withUTF8 { canonical(utf8: $0) }
    }

    /// The canonical text of the ISO 8601 date or date-time in `bytes`.
    package static func canonical(utf8 bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var p = Scanner(bytes: bytes)
        guard let year = p.digits(4), p.expect(UInt8(ascii: "-")),
            let month = p.digits(2), p.expect(UInt8(ascii: "-")),
            let day = p.digits(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        if p.atEnd {
            return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        }
        guard p.expect(UInt8(ascii: "T")) || p.expect(UInt8(ascii: "t")) || p.expect(UInt8(ascii: " ")),
            let hour = p.digits(2), p.expect(UInt8(ascii: ":")), let minute = p.digits(2)
        else { return nil }
        var second = 0
        var millis = 0
        if p.expect(UInt8(ascii: ":")) {
            guard let s = p.digits(2) else { return nil }
            second = s
            if p.expect(UInt8(ascii: ".")) || p.expect(UInt8(ascii: ",")) {
                var count = 0
                while let d = p.digit() {
                    if count < 3 { millis = millis * 10 + d }
                    count += 1
                }
                guard count > 0 else { return nil }
                for _ in count..<max(count, 3) { millis *= 10 }
            }
        }
        guard hour < 24, minute < 60, second < 60 else { return nil }
        var offsetMinutes = 0
        if p.expect(UInt8(ascii: "Z")) || p.expect(UInt8(ascii: "z")) {
            // UTC
        } else if let sign = p.sign() {
            guard let oh = p.digits(2) else { return nil }
            _ = p.expect(UInt8(ascii: ":"))
            guard let om = p.digits(2), oh < 24, om < 60 else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
        }
        guard p.atEnd else { return nil }
        var days = daysFromCivil(year: year, month: month, day: day)
        var minutes = hour * 60 + minute - offsetMinutes
        days += minutes.floorDiv(1440)
        minutes = minutes.floorMod(1440)
        let (y, m, d) = civilFromDays(days)
        guard (0...9999).contains(y) else { return nil }
        return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T" + pad(minutes / 60, 2) + ":"
            + pad(minutes % 60, 2) + ":" + pad(second, 2) + "." + pad(millis, 3) + "Z"
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil and civil_from_days.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0
        var atEnd: Bool { i == bytes.count }
        mutating func digit() -> Int? {
            guard i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 else { return nil }
            defer { i += 1 }
            return Int(bytes[i] - 0x30)
        }
        mutating func digits(_ n: Int) -> Int? {
            var v = 0
            for _ in 0..<n {
                guard let d = digit() else { return nil }
                v = v * 10 + d
            }
            return v
        }
        mutating func expect(_ b: UInt8) -> Bool {
            guard i < bytes.count, bytes[i] == b else { return false }
            i += 1
            return true
        }
        mutating func sign() -> Int? {
            if expect(UInt8(ascii: "+")) { return 1 }
            if expect(UInt8(ascii: "-")) { return -1 }
            return nil
        }
    }
}

extension Int {
    fileprivate func floorDiv(_ d: Int) -> Int { (self >= 0 ? self : self - d + 1) / d }
    fileprivate func floorMod(_ d: Int) -> Int { self - floorDiv(d) * d }
}
