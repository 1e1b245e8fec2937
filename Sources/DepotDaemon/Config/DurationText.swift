import DepotEngine

/// Durations as the configuration and the API write them: `500ms`, `2s`,
/// `5m`, `1h`, `7d`, `2w`, or a number of seconds, each read with the range
/// its setting allows.
///
/// Every duration a user gives goes through ``parse(_:in:)``: a value outside
/// the range (`1e300s`, `-5`, `99999999999999d`) is refused with a message
/// that names the range, never converted with a trap.
///
/// For example:
///
/// ```swift
/// let retention = try DurationText.parse("30d", in: DurationText.retention)   // 2,592,000 s
/// _ = try DurationText.parse("1e300s", in: DurationText.retention)           // throws Invalid
/// ```
package enum DurationText {
    /// Why a text is not a duration in range, as the end of a sentence
    /// ("must be a duration from 1ms to 1d, such as …").
    package struct Invalid: Error, CustomStringConvertible, Sendable {
        package var reason: String
        package var description: String { reason }
    }

    /// The longest duration any setting takes: 100 years.
    package static let longest: Duration = .seconds(36_500 * 86_400)
    /// History ages: `history_retention`, `older_than`.
    package static let retention: ClosedRange<Duration> = .zero...longest
    /// How long a save may gather records (`save_interval`).
    package static let saveInterval: ClosedRange<Duration> = .milliseconds(1)...(.seconds(86_400))
    /// How long a connection may stay idle (`idle_timeout`).
    package static let idleTimeout: ClosedRange<Duration> = .seconds(1)...(.seconds(86_400))

    private static let units: [(suffix: String, seconds: Double)] = [
        ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)
    ]

    /// Reads `text` as a duration within `range`.
    ///
    /// - Throws: ``Invalid`` when the text is not a duration or lies outside `range`.
    package static func parse(_ text: String, in range: ClosedRange<Duration>) throws(Invalid) -> Duration {
        let s = text.trimmingWhitespace()
        var number = Substring(s)
        var scale = 1.0
        for (suffix, seconds) in units where s.hasSuffix(suffix) {
            // "ms" must not be read as "m" + "s".
            if suffix == "s", s.hasSuffix("ms") { continue }
            number = s.dropLast(suffix.count)
            scale = seconds
            break
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(number), value.isFinite
        else {
            throw Invalid(reason: expectation(range))
        }
        return try seconds(value * scale, in: range)
    }

    /// A whole number of seconds (TOML's `idle_timeout = 60`) within `range`.
    package static func seconds(_ value: Int, in range: ClosedRange<Duration>) throws(Invalid) -> Duration {
        try seconds(Double(value), in: range)
    }

    private static func seconds(_ seconds: Double, in range: ClosedRange<Duration>) throws(Invalid) -> Duration {
        let low = Double(range.lowerBound.components.seconds) + Double(range.lowerBound.components.attoseconds) / 1e18
        let high = Double(range.upperBound.components.seconds)
        guard seconds.isFinite, seconds >= low, seconds <= high else { throw Invalid(reason: expectation(range)) }
        // At most 100 years: milliseconds fit an Int64 by far.
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// "must be a duration from 1ms to 1d, such as …".
    static func expectation(_ range: ClosedRange<Duration>) -> String {
        "must be a duration from \(format(range.lowerBound)) to \(format(range.upperBound)), "
            + "such as \"500ms\", \"2s\", \"5m\", \"1h\" or \"7d\""
    }

    /// The shortest text that reads back as `d`: `0s`, `1ms`, `1d`, `36500d`.
    package static func format(_ d: Duration) -> String {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        if ms == 0 { return "0s" }
        for (suffix, seconds) in units.reversed() where suffix != "w" {
            let unit = Int64(seconds * 1000)
            if ms % unit == 0 { return "\(ms / unit)\(suffix)" }
        }
        return "\(ms)ms"
    }
}
