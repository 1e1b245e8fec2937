import DepotWire

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
