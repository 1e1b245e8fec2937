/// A minimal JSON reader for what the engine itself writes: scalars, arrays
/// of scalars and flat objects (identifiers and tombstones).
enum MiniJSON {
    enum Parsed {
        case scalar(Value)
        case array([Value])
        case object([(String, Value)])
    }

    static func parse(_ text: String) -> Parsed? {
        var p = Parser(scalars: Array(text.unicodeScalars))
        p.skipSpace()
        let result: Parsed?
        if p.peek == "[" {
            p.i += 1
            var items: [Value] = []
            p.skipSpace()
            if p.peek == "]" {
                p.i += 1; result = .array(items)
            } else {
                var r: Parsed? = nil
                while let v = p.scalar() {
                    items.append(v)
                    p.skipSpace()
                    if p.peek == "," { p.i += 1; continue }
                    if p.peek == "]" { p.i += 1; r = .array(items) }
                    break
                }
                result = r
            }
        } else if p.peek == "{" {
            p.i += 1
            var items: [(String, Value)] = []
            p.skipSpace()
            if p.peek == "}" {
                p.i += 1; result = .object(items)
            } else {
                var r: Parsed? = nil
                while case .string(let key)? = p.scalar() {
                    p.skipSpace()
                    guard p.peek == ":" else { break }
                    p.i += 1
                    guard let v = p.scalar() else { break }
                    items.append((key, v))
                    p.skipSpace()
                    if p.peek == "," { p.i += 1; continue }
                    if p.peek == "}" { p.i += 1; r = .object(items) }
                    break
                }
                result = r
            }
        } else {
            result = p.scalar().map { .scalar($0) }
        }
        p.skipSpace()
        return p.i == p.scalars.count ? result : nil
    }

    private struct Parser {
        let scalars: [Unicode.Scalar]
        var i = 0
        var peek: Unicode.Scalar? { i < scalars.count ? scalars[i] : nil }

        mutating func skipSpace() {
            while let c = peek, c == " " || c == "\n" || c == "\t" || c == "\r" { i += 1 }
        }

        mutating func word(_ w: String) -> Bool {
            let ws = Array(w.unicodeScalars)
            guard i + ws.count <= scalars.count, Array(scalars[i..<i + ws.count]) == ws else { return false }
            i += ws.count
            return true
        }

        mutating func scalar() -> Value? {
            skipSpace()
            guard let c = peek else { return nil }
            if word("null") { return .null }
            if word("true") { return .bool(true) }
            if word("false") { return .bool(false) }
            if c == "\"" { return string().map { .string($0) } }
            let start = i
            while let d = peek, "0123456789+-.eE".unicodeScalars.contains(d) { i += 1 }
            let text = String(String.UnicodeScalarView(scalars[start..<i]))
            if let int = Int64(text) { return .int(int) }
            if let double = Double(text) { return .double(double) }
            return nil
        }

        mutating func string() -> String? {
            i += 1
            var out = String.UnicodeScalarView()
            while let c = peek {
                i += 1
                if c == "\"" { return String(out) }
                if c != "\\" { out.append(c); continue }
                guard let e = peek else { return nil }
                i += 1
                switch e {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                case "b": out.append("\u{08}")
                case "f": out.append("\u{0C}")
                case "u":
                    guard let hi = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(hi), word("\\u"), let lo = hex4(), (0xDC00..<0xE000).contains(lo) {
                        out.append(Unicode.Scalar(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))!)
                    } else if let s = Unicode.Scalar(hi) {
                        out.append(s)
                    } else {
                        out.append("\u{FFFD}")
                    }
                default: out.append(e)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard i + 4 <= scalars.count,
                let v = UInt32(String(String.UnicodeScalarView(scalars[i..<i + 4])), radix: 16)
            else { return nil }
            i += 4
            return v
        }
    }
}
