/// How a delimited text file is written (DESIGN §18): what `depotctl infer`
/// reports and an import of the file reads it with.
public struct Dialect: Sendable, Hashable {
    /// The byte between fields: `,` `;` tab or `|`.
    public var delimiter: UInt8
    /// The byte that quotes a field: `"` or `'`.
    public var quote: UInt8
    /// Whether the first record names the columns.
    public var header: Bool
    /// Whether spaces after a delimiter are dropped (`a, b, "c, d"`).
    public var skipInitialSpace: Bool
    /// Whether a quote inside an unquoted field is text (`37.8"N`), as
    /// PostgreSQL reads it; strict RFC 4180 rejects such a record.
    public var lenientQuotes = false
    /// The byte that makes the next one text inside a quoted field (`\`,
    /// as in `"H. Norwood \"Barney\" Ewell"`), or `nil`: only a doubled
    /// quote is one.
    public var escape: UInt8?

    public init(
        delimiter: UInt8, quote: UInt8 = UInt8(ascii: "\""), header: Bool = true, skipInitialSpace: Bool = false
    ) {
        self.delimiter = delimiter
        self.quote = quote
        self.header = header
        self.skipInitialSpace = skipInitialSpace
    }

    /// The delimiter as text: `,`, `;`, `\t` for a tab, `|`.
    public var delimiterText: String { delimiter == 0x09 ? "\\t" : String(UnicodeScalar(delimiter)) }
}

/// Tells a delimited file's dialect from a sample of its first bytes.
///
/// Each candidate (delimiter `,` `;` tab `|`, then `:` `+` `?` `^` `~` `#`,
/// × quote `"` `'`) parses the
/// sample (a delimiter the sample never holds is not tried), and is scored
/// the way CleverCSV's data consistency measure does
/// (van den Burg et al., 2019): how regular the rows' lengths are (the
/// pattern score) times how many cells read as a known kind of value — a
/// number, a date, a boolean, an empty cell — (the type score). The best
/// wins; ties go to the commoner dialect (`,` before tab, `;`, `|`; `"`
/// before `'`). The whole file is then read with it, which verifies it:
/// rows of another length are reported with their lines. Hand-written
/// because no Swift package here sniffs CSV.
enum DialectSniffer {
    /// The delimiters tried, commonest first (ties go to the earlier):
    /// those of DESIGN §18, then rarer ones that files use too.
    static let delimiters: [UInt8] =
        [UInt8(ascii: ","), 0x09, UInt8(ascii: ";"), UInt8(ascii: "|")]
        + Array(":+?^~#".utf8)
    static let quotes: [UInt8] = [UInt8(ascii: "\""), UInt8(ascii: "'")]

    /// The sample's rows as read with `delimiter` and `quote`: each row its
    /// cells' bytes (quotes removed, doubled quotes undone). A row cut by the
    /// sample's end is dropped unless it is the only one.
    static func rows(
        _ sample: [UInt8], delimiter: UInt8, quote: UInt8, escape: UInt8? = nil, skipInitialSpace: Bool = false,
        complete: Bool
    ) -> [[ArraySlice<UInt8>]] {
        var rows: [[ArraySlice<UInt8>]] = []
        var row: [ArraySlice<UInt8>] = []
        var i = 0
        let n = sample.count
        var cut = false
        while i < n {
            // A blank line.
            if row.isEmpty, sample[i] == 0x0A || sample[i] == 0x0D {
                i += 1
                continue
            }
            if skipInitialSpace { while i < n, sample[i] == 0x20 { i += 1 } }
            if i < n, sample[i] == quote {
                var cell: [UInt8] = []
                var j = i + 1
                var closed = false
                while j < n {
                    if sample[j] == escape, j + 1 < n {
                        cell.append(sample[j + 1])
                        j += 2
                        continue
                    }
                    if sample[j] == quote {
                        if j + 1 < n, sample[j + 1] == quote {
                            cell.append(quote)
                            j += 2
                            continue
                        }
                        closed = true
                        break
                    }
                    cell.append(sample[j])
                    j += 1
                }
                if !closed {
                    cut = true
                    break
                }
                // Text after the closing quote stays in the cell (lenient).
                j += 1
                while j < n, sample[j] != delimiter, sample[j] != 0x0A, sample[j] != 0x0D {
                    cell.append(sample[j])
                    j += 1
                }
                row.append(cell[...])
                i = j
            } else {
                var j = i
                while j < n, sample[j] != delimiter, sample[j] != 0x0A, sample[j] != 0x0D { j += 1 }
                row.append(sample[i..<j])
                i = j
            }
            if i >= n {
                if complete { rows.append(row) } else { cut = true }
                row = []
                break
            }
            if sample[i] == delimiter {
                i += 1
                if i == n {
                    row.append([])
                    if complete { rows.append(row) } else { cut = true }
                    row = []
                }
                continue
            }
            // A record end: CRLF, LF or CR.
            if sample[i] == 0x0D, i + 1 < n, sample[i + 1] == 0x0A { i += 1 }
            i += 1
            rows.append(row)
            row = []
        }
        if cut, rows.isEmpty, !row.isEmpty { rows.append(row) }
        return rows
    }

    /// CleverCSV's pattern score: rows grouped by length, each group weighing
    /// its count times (length − 1) / length, divided by the number of groups.
    static func patternScore(_ rows: [[ArraySlice<UInt8>]]) -> Double {
        guard !rows.isEmpty else { return 0 }
        var counts: [Int: Int] = [:]
        for r in rows { counts[r.count, default: 0] += 1 }
        var score = 0.0
        // In the lengths' order: a sum of doubles in a dictionary's order
        // (which differs between two dictionaries of the same entries) told
        // one file's escape differently on a second inference (CI's
        // FuzzInfer finding of 2026-11-29).
        for (length, count) in counts.sorted(by: { $0.key < $1.key }) {
            let weight = length == 1 ? 0.001 : Double(length - 1) / Double(length)
            score += Double(count) * weight
        }
        return score / Double(counts.count) / Double(rows.count)
    }

    /// The share of cells that read as a known kind of value. A cell that
    /// holds the delimiter was quoted for it, which is known too.
    static func typeScore(_ rows: [[ArraySlice<UInt8>]], delimiter: UInt8) -> Double {
        var known = 0
        var total = 0
        for row in rows {
            for cell in row {
                total += 1
                if cell.contains(delimiter) || ValueKind.isKnown(cell) { known += 1 }
            }
        }
        return total == 0 ? 0 : Double(known) / Double(total)
    }

    /// The best dialect for `sample` (header not yet told), or `nil` when
    /// the sample holds no row.
    static func sniff(_ sample: [UInt8], complete: Bool) -> Dialect? {
        var best: (score: Double, dialect: Dialect)?
        for delimiter in delimiters {
            // A delimiter the sample never holds is only right for one
            // column, which `,` (the first) stands for.
            if delimiter != delimiters[0], !sample.contains(delimiter) { continue }
            for quote in quotes {
                let rows = rows(sample, delimiter: delimiter, quote: quote, complete: complete)
                guard !rows.isEmpty else { continue }
                let p = patternScore(rows)
                let t = typeScore(rows, delimiter: delimiter)
                // A quote that never opens a cell adds nothing: `"` stands for it.
                if quote != quotes[0], !opensCells(sample, quote: quote, delimiter: delimiter) { continue }
                let score = p * max(t, 0.01)
                if best == nil || score > best!.score + 1e-9 {
                    best = (score, Dialect(delimiter: delimiter, quote: quote))
                }
            }
        }
        guard var dialect = best?.dialect else { return nil }
        dialect.skipInitialSpace = startsWithSpace(sample, dialect)
        if backslashEscapes(sample, dialect) {
            let plain = patternScore(
                rows(sample, delimiter: dialect.delimiter, quote: dialect.quote, complete: complete))
            let escaped = patternScore(
                rows(
                    sample, delimiter: dialect.delimiter, quote: dialect.quote, escape: 0x5C, complete: complete))
            if escaped >= plain { dialect.escape = 0x5C }
        }
        return dialect
    }

    /// Whether a quoted field of the sample holds `\"` where a closing
    /// quote cannot stand (text follows it), as CleverCSV and DuckDB detect
    /// an escape character: `"H. Norwood \"Barney\" Ewell"`.
    static func backslashEscapes(_ sample: [UInt8], _ d: Dialect) -> Bool {
        let n = sample.count
        var i = 0
        var inQuote = false
        var atFieldStart = true
        while i < n {
            let c = sample[i]
            if inQuote {
                if c == 0x5C, i + 1 < n, sample[i + 1] == d.quote {
                    let after = i + 2 < n ? sample[i + 2] : nil
                    if let after, after != d.delimiter, after != 0x0A, after != 0x0D, after != d.quote {
                        return true
                    }
                }
                if c == d.quote {
                    if i + 1 < n, sample[i + 1] == d.quote {
                        i += 2
                        continue
                    }
                    inQuote = false
                }
            } else if c == d.quote, atFieldStart {
                inQuote = true
            }
            atFieldStart =
                c == d.delimiter || c == 0x0A || c == 0x0D || (d.skipInitialSpace && c == 0x20 && atFieldStart)
            i += 1
        }
        return false
    }

    /// Whether some cell of the sample starts with `quote`.
    static func opensCells(_ sample: [UInt8], quote: UInt8, delimiter: UInt8) -> Bool {
        var previous: UInt8 = 0x0A
        for c in sample {
            if c == quote, previous == delimiter || previous == 0x0A || previous == 0x0D || previous == 0x20 {
                return true
            }
            previous = c
        }
        return false
    }

    /// Whether most cells after a delimiter start with a space, and at least
    /// one starts with a space then a quote (`a, "b"`): the writer put a
    /// space after each delimiter.
    static func startsWithSpace(_ sample: [UInt8], _ d: Dialect) -> Bool {
        var after = 0
        var spaced = 0
        var quoted = 0
        var inQuote = false
        var i = 0
        while i < sample.count {
            let c = sample[i]
            if c == d.quote { inQuote.toggle() }
            if !inQuote, c == d.delimiter {
                after += 1
                if i + 1 < sample.count, sample[i + 1] == 0x20 {
                    spaced += 1
                    if i + 2 < sample.count, sample[i + 2] == d.quote { quoted += 1 }
                }
            }
            i += 1
        }
        return after > 0 && spaced * 10 >= after * 9 && quoted > 0
    }

    /// Whether the first row names the columns, by the votes of its cells
    /// (as Python's `csv.Sniffer.has_header` counts them, with Depot's
    /// kinds of value): a column whose cells below all read as one kind (a
    /// number, a date, a boolean) votes for a header when its first cell is
    /// not of that kind, against when it is; a text column whose cells
    /// below all have one length votes for a header when its first cell's
    /// length differs, against when it is the same. Without votes either
    /// way, the first row is a header when its cells are present, distinct,
    /// and met again in no row below. A file of one row has a header.
    static func hasHeader(_ rows: [[ArraySlice<UInt8>]]) -> Bool {
        guard let first = rows.first, rows.count > 1 else { return true }
        let body = rows.dropFirst().prefix(1_000)
        var votes = 0
        for c in first.indices {
            var kind: ValueKind?
            var consistent = true
            var length: Int?
            var sameLength = true
            var cells = 0
            for row in body where c < row.count {
                let cell = row[c]
                if cell.isEmpty || NullSpelling.spelling(cell) != nil { continue }
                cells += 1
                let k = ValueKind.of(cell)
                if kind == nil { kind = k } else if kind != k { consistent = false }
                let n = String(decoding: cell, as: UTF8.self).count
                if length == nil { length = n } else if length != n { sameLength = false }
            }
            guard cells > 0, consistent, let kind else { continue }
            let head = first[c]
            if kind != .text {
                votes += head.isEmpty || ValueKind.of(head) != kind ? 1 : -1
            } else if sameLength, let length {
                votes += String(decoding: head, as: UTF8.self).count != length ? 1 : -1
            }
        }
        if votes != 0 { return votes > 0 }
        // No votes: a header is present and distinct, and its names are
        // not values of their columns.
        var seen = Set<ArraySlice<UInt8>>()
        for cell in first {
            if cell.isEmpty || !seen.insert(cell).inserted { return false }
        }
        for row in body {
            for (c, cell) in row.enumerated() where c < first.count && cell == first[c] { return false }
        }
        return true
    }
}

/// What a cell's text reads as, for sniffing.
enum ValueKind: Equatable {
    /// `clock` is a time of day (`20:53:06`, `06:00:04+01:00`) or a date
    /// written with slashes or dots (`12/28/02`, `28.12.2002`): values the
    /// import reads as text, but a kind all the same for telling a dialect
    /// and a header.
    case int, double, date, bool, clock, text

    static func of(_ cell: ArraySlice<UInt8>) -> ValueKind {
        cell.withUnsafeBufferPointer { b in
            if FieldParser.parseInt(b) != nil { return .int }
            if FieldParser.parseDouble(b) != nil { return .double }
            if BoolWords.isWord(b) { return .bool }
            if DateValue.canonical(utf8: FieldParser.trimmed(b)) != nil { return .date }
            if isClock(FieldParser.trimmed(b)) { return .clock }
            return .text
        }
    }

    /// Digit groups of 1 to 4 joined by one kind of separator (`:` `/` `.`
    /// `-`), 2 or 3 groups, a time's zone (`+01:00`, `Z`) after them allowed.
    static func isClock(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        var groups = 0
        var separator: UInt8?
        while i < b.count {
            var digits = 0
            while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) {
                digits += 1
                i += 1
            }
            guard digits >= 1, digits <= 4 else { return false }
            groups += 1
            guard i < b.count else { break }
            let c = b[i]
            if c == UInt8(ascii: "+") || c == UInt8(ascii: "Z")
                || (c == UInt8(ascii: "-") && separator == UInt8(ascii: ":"))
            {
                // A zone after a time: +HH:MM, -HH:MM or Z.
                return separator == UInt8(ascii: ":") && groups >= 2
                    && (c == UInt8(ascii: "Z")
                        ? i + 1 == b.count : isClock(UnsafeBufferPointer(rebasing: b[(i + 1)...])))
            }
            guard [UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: "-")].contains(c) else {
                return false
            }
            if let separator, separator != c { return false }
            separator = c
            i += 1
            guard i < b.count else { return false }
        }
        return groups >= 2 && groups <= 3 && separator != nil
    }

    /// A number, a date, a boolean word, an empty cell or a null spelling:
    /// or a plain word or phrase (letters, digits, spaces, a few marks), as
    /// CleverCSV also counts such cells as typed.
    static func isKnown(_ cell: ArraySlice<UInt8>) -> Bool {
        if cell.isEmpty || NullSpelling.spelling(cell) != nil { return true }
        if of(cell) != .text { return true }
        // A quote left at either end: a quote the dialect did not read.
        if let f = cell.first, let l = cell.last, f == 0x22 || f == 0x27 || l == 0x22 || l == 0x27 { return false }
        var letters = false
        for c in cell {
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), 0x80...0xFF:
                letters = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"), 0x20, UInt8(ascii: "-"), UInt8(ascii: "_"),
                UInt8(ascii: "."), UInt8(ascii: "'"), UInt8(ascii: "/"), UInt8(ascii: "@"), UInt8(ascii: ":"),
                UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "&"):
                break
            default:
                return false
            }
        }
        return letters
    }
}

/// The words a boolean field is inferred from (the import also reads 1 and 0).
enum BoolWords {
    static func isWord(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let t = FieldParser.trimmed(b)
        guard t.count >= 1, t.count <= 5, FieldParser.parseBool(t) != nil else { return false }
        return !(t.count == 1 && (t[0] == UInt8(ascii: "0") || t[0] == UInt8(ascii: "1")))
    }
}

/// The spellings of null that inference counts (DESIGN §18), besides an
/// empty cell.
enum NullSpelling {
    static let all = ["NA", "N/A", "n/a", "NULL", "null", "-"]
    private static let bytes = all.map { Array($0.utf8) }

    static func spelling(_ cell: ArraySlice<UInt8>) -> String? {
        guard cell.count <= 4 else { return nil }
        for (k, b) in bytes.enumerated() where cell.elementsEqual(b) { return all[k] }
        return nil
    }

    static func spelling(_ cell: UnsafeBufferPointer<UInt8>) -> String? {
        guard cell.count <= 4 else { return nil }
        for (k, b) in bytes.enumerated() where cell.elementsEqual(b) { return all[k] }
        return nil
    }
}
