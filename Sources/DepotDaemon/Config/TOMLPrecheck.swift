import CTOMLGuard

/// Finds the TOML that crashes the TOML library before it reads it.
///
/// TOMLKit 0.6.0 wraps toml++, whose parser asserts (and aborts the process)
/// in two places that a typo reaches: when the character after `[` or `[[`
/// of a table header cannot start a key (`[`daemon]`), and when `}` stands
/// where an array expects a value (`write = [}`, `a = [1, }`). Either kills
/// `depotd --check-config`, and a reload (SIGHUP) with such a typo would kill
/// the daemon. Both found by `scripts/fuzz FuzzConfig`. A third (issue #35):
/// a date-time whose `T` is not followed by a digit (`2026-11-26T:10:00`,
/// `TT07`, `T-10:00`, `Ta7:32:00Z`) reaches `parse_time`, which asserts a
/// digit. This scan follows just enough of TOML's structure (strings,
/// comments, the nesting of arrays and inline tables in values) to find
/// them, and refuses them with their line.
enum TOMLPrecheck {
    /// `nil`, or "line L, column C: …" for the first of them.
    static func problem(in text: String) -> String? {
        let s = Array(text.utf8)
        var i = 0
        var line = 1
        var lineStart = 0
        var open: [UInt8] = []  // the [ and { open inside a value, innermost last
        var arrayValueNext = false  // after [ or , inside an array: a value (or ]) comes
        var atLineStart = true  // only spaces so far on this line
        func isKeyStart(_ c: UInt8) -> Bool {
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
                || c == 0x5F || c == 0x2D || c == 0x22 || c == 0x27 || c == 0x5D
        }
        func skipString(_ quote: UInt8) {
            let multi = i + 2 < s.count && s[i + 1] == quote && s[i + 2] == quote
            i += multi ? 3 : 1
            while i < s.count {
                let c = s[i]
                if c == 0x0A {
                    if !multi { return }  // a broken string: the TOML library reports it
                    line += 1
                    lineStart = i + 1
                }
                if quote == 0x22, c == 0x5C { i += 2; continue }
                if c == quote {
                    if !multi { i += 1; return }
                    if i + 2 < s.count, s[i + 1] == quote, s[i + 2] == quote {
                        i += 3
                        // Up to two more quotes may close a multi-line string.
                        while i < s.count, s[i] == quote { i += 1 }
                        return
                    }
                }
                i += 1
            }
        }
        while i < s.count {
            let c = s[i]
            switch c {
            case 0x0A:
                line += 1
                lineStart = i + 1
                atLineStart = true
                i += 1
                continue
            case 0x20, 0x09, 0x0D:
                i += 1
                continue
            case 0x23:  // a comment, to the end of the line
                while i < s.count, s[i] != 0x0A { i += 1 }
                continue
            case 0x7D where arrayValueNext:
                return "line \(line), column \(i - lineStart + 1): not valid TOML: } where the array expects "
                    + "a value or its closing ]"
            case 0x22, 0x27:
                atLineStart = false
                arrayValueNext = false
                skipString(c)
                continue
            case 0x5B where atLineStart && open.isEmpty:
                // A table header: [ name ] or [[ name ]].
                var j = i + 1
                while j < s.count, s[j] == 0x20 || s[j] == 0x09 { j += 1 }
                if j < s.count, s[j] == 0x5B {
                    j += 1
                    while j < s.count, s[j] == 0x20 || s[j] == 0x09 { j += 1 }
                }
                if j < s.count, !isKeyStart(s[j]) {
                    return "line \(line), column \(j - lineStart + 1): not valid TOML: a table name must be a bare key "
                        + "(letters, digits, _ and -) or quoted, as in [store] or [\"my store\"]"
                }
                // The rest of the header line: quoted keys may hold brackets.
                i = j
                atLineStart = false
                while i < s.count, s[i] != 0x0A, s[i] != 0x23 {
                    if s[i] == 0x22 || s[i] == 0x27 { skipString(s[i]) } else { i += 1 }
                }
                continue
            case 0x5B, 0x7B:
                open.append(c)
                atLineStart = false
                arrayValueNext = c == 0x5B
                i += 1
                continue
            case 0x5D, 0x7D:
                _ = open.popLast()
            case 0x2C:
                atLineStart = false
                arrayValueNext = open.last == 0x5B
                i += 1
                continue
            case 0x30...0x39:
                if let column = brokenDateTime(s, at: i) {
                    return "line \(line), column \(column - lineStart + 1): not valid TOML: a date-time needs a time "
                        + "of two-digit hours after its T, as in 2026-11-26T10:00:00Z"
                }
            default:
                break
            }
            atLineStart = false
            arrayValueNext = false
            i += 1
        }
        return nil
    }

    /// The line where toml++ stops at one of its assertions reading `text`,
    /// or `nil` when it reads it (or refuses it with a parse error, which
    /// TOMLKit then reports). The parses run in `depot_toml_guard`, where
    /// the assertion's abort returns instead of ending depotd; the line is
    /// the shortest run of first lines that still stops it, found by halves.
    static func abortingLine(in text: String) -> Int? {
        guard depot_toml_guard(text) == DEPOT_TOML_ABORTED else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var low = 1, high = lines.count
        while low < high {
            let middle = (low + high) / 2
            if depot_toml_guard(lines[..<middle].joined(separator: "\n")) == DEPOT_TOML_ABORTED {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return high
    }

    /// The index of the character after the `T` of a date-time that starts
    /// at `i` (`YYYY-MM-DDT`) when it is not a digit, in a bare value that
    /// holds a colon (so the TOML library reads it as a date-time, not a key
    /// or a date); `nil` otherwise.
    static func brokenDateTime(_ s: [UInt8], at i: Int) -> Int? {
        func digit(_ k: Int) -> Bool { k < s.count && s[k] >= 0x30 && s[k] <= 0x39 }
        let shape =
            digit(i) && digit(i + 1) && digit(i + 2) && digit(i + 3) && i + 10 < s.count && s[i + 4] == 0x2D
            && digit(i + 5) && digit(i + 6) && s[i + 7] == 0x2D && digit(i + 8) && digit(i + 9)
            && (s[i + 10] == 0x54 || s[i + 10] == 0x74)
        guard shape, !digit(i + 11) else { return nil }
        // The rest of the bare value, to its terminator.
        var k = i + 11
        while k < s.count, ![0x20, 0x09, 0x0A, 0x0D, 0x2C, 0x5D, 0x7D, 0x23, 0x3D].contains(s[k]) {
            if s[k] == 0x3A { return i + 11 }
            k += 1
        }
        return nil
    }
}
