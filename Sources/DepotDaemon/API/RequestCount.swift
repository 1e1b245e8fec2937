/// A count in a request body (`limit`, `offset`): a whole number from 0 up,
/// read with its range checked.
///
/// Foundation's decoder reports `1e300` or `1.5` for an `Int` as "not valid
/// JSON" for the whole body; this says which key holds what, e.g.
/// `"limit" must be a whole number from 0 to 9223372036854775807`.
struct RequestCount: Decodable, Sendable, Hashable {
    var value: Int

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let i = try? c.decode(Int.self), i >= 0 {
            value = i
            return
        }
        throw DecodingError.dataCorrupted(
            .init(
                codingPath: decoder.codingPath,
                debugDescription: "must be a whole number from 0 to \(Int.max)"))
    }
}

/// A count in a query string (`?limit=`): decimal digits, read saturating, so
/// that a number past `Int.max` is simply "very many" and is capped like any
/// other large one (`limit=99999999999999999999999` lists at most the cap).
enum QueryCount {
    /// The count in `text`, at least `minimum`, at most `cap`; anything but
    /// decimal digits (a sign, a fraction, an exponent, nothing) is an error
    /// naming `name`.
    static func parse(_ text: some StringProtocol, name: String, minimum: Int, cap: Int) throws -> Int {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw APIError(
                .invalidArgument, "\(name) must be a whole number from \(minimum) up (at most \(cap) are used)")
        }
        var n = 0
        for digit in text.utf8 {
            let (times, o1) = n.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int(digit - UInt8(ascii: "0")))
            if o1 || o2 { return cap }
            n = sum
        }
        guard n >= minimum else {
            throw APIError(
                .invalidArgument, "\(name) must be a whole number from \(minimum) up (at most \(cap) are used)")
        }
        return min(n, cap)
    }
}
