import Foundation

/// Numbers, dates and durations the way people read them.
enum Format {
    /// 1234567 → "1,234,567".
    static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// 123904000 → "118.2 MiB": a size in bytes, in the largest binary unit under 1024 of it.
    static func bytes(_ n: Int64) -> String {
        var value = Double(n)
        for unit in ["B", "KiB", "MiB", "GiB", "TiB"] {
            if value < 1024 || unit == "TiB" {
                return unit == "B" ? "\(n) B" : String(format: "%.1f %@", value, unit)
            }
            value /= 1024
        }
        return "\(n) B"
    }

    /// At most two decimals, integer part grouped.
    static func decimal(_ d: Double) -> String {
        // Past 10^15 (and for inf, nan) Int cannot hold the whole part: as Swift writes it.
        guard d.isFinite, d.magnitude < 1e15 else { return "\(d)" }
        let rounded = (d * 100).rounded() / 100
        let whole = Int(rounded.magnitude)
        let cents = Int(((rounded.magnitude - Double(whole)) * 100).rounded())
        let sign = rounded < 0 ? "-" : ""
        return sign + grouped(whole)
            + (cents == 0
                ? ""
                : String(format: ".%02d", cents).replacingOccurrences(of: "0$", with: "", options: .regularExpression))
    }

    /// "2026-11-21T07:35:15.341Z" → "2026-11-21 08:35:15" in local time.
    static func date(_ iso: String?) -> String {
        guard let iso else { return "" }
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = parser.date(from: iso) ?? ISO8601DateFormatter().date(from: iso) else { return iso }
        let out = DateFormatter()
        out.dateFormat = "yyyy-MM-dd HH:mm:ss"
        out.timeZone = .current
        return out.string(from: date)
    }

    /// 75 → "1m 15s".
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "?" }
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m \(String(format: "%02d", s % 60))s" }
        return "\(s / 3600)h \(String(format: "%02d", s % 3600 / 60))m"
    }

    /// RFC 4180: quoted when it holds a comma, a quote or a line break.
    static func csvField(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
