/// Splits a predicate's text into tokens, each with its 1-based position.
struct PredicateLexer {
    enum Kind: Equatable {
        case identifier(String)  // a bare word: field name or keyword
        case quotedField(String)  // `Organization Name`
        case string(String)
        case number(String)
        case variable(String)  // $name
        case op(String)  // == != < <= > >= && || ! + - * /
        case function(String)  // uppercase: or modulus:by:, before its "("
        case lparen, rparen, lbrace, rbrace, comma
        case options(String)  // [cd]
        case end
    }

    struct Token: Equatable {
        var kind: Kind
        var position: Int
    }

    private let scalars: [Unicode.Scalar]
    private var i = 0
    /// Whether the last token ends an operand, so that a `+` or `-` after
    /// it is an operator (`budget - 1`), not a number's sign (`> -1`).
    private var afterOperand = false

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    static func tokenize(_ text: String) throws -> [Token] {
        var lexer = PredicateLexer(text)
        var tokens: [Token] = []
        while true {
            let t = try lexer.next()
            tokens.append(t)
            if t.kind == .end { return tokens }
            switch t.kind {
            case .identifier, .quotedField, .string, .number, .variable, .rparen, .rbrace: lexer.afterOperand = true
            default: lexer.afterOperand = false
            }
        }
    }

    private func error(_ message: String, at index: Int) -> DepotError {
        DepotError(.invalidPredicate, message, position: index + 1)
    }

    private var peek: Unicode.Scalar? { i < scalars.count ? scalars[i] : nil }

    private static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        c == "_" || c.properties.isAlphabetic
    }

    /// A key path's parts: `customer.name`, `lines.@count`, `lines.@sum.price`.
    private static func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
        isIdentifierStart(c) || c.properties.numericType != nil || c == "." || c == "@"
    }

    mutating func next() throws -> Token {
        while let c = peek, c.properties.isWhitespace { i += 1 }
        let start = i
        guard let c = peek else { return Token(kind: .end, position: start + 1) }
        func token(_ kind: Kind) -> Token { Token(kind: kind, position: start + 1) }
        switch c {
        case "(": i += 1; return token(.lparen)
        case ")": i += 1; return token(.rparen)
        case "{": i += 1; return token(.lbrace)
        case "}": i += 1; return token(.rbrace)
        case ",": i += 1; return token(.comma)
        case "\"", "'": return token(.string(try string(quote: c)))
        case "`":
            i += 1
            var name = String.UnicodeScalarView()
            while let d = peek, d != "`" { name.append(d); i += 1 }
            guard peek == "`" else { throw error("unterminated field name: a closing ` is missing", at: start) }
            i += 1
            guard !name.isEmpty else { throw error("empty field name between backquotes", at: start) }
            return token(.quotedField(String(name)))
        case "$":
            i += 1
            var name = String.UnicodeScalarView()
            while let d = peek, Self.isIdentifierPart(d) { name.append(d); i += 1 }
            guard !name.isEmpty else { throw error("expected a variable name after $", at: start) }
            return token(.variable(String(name)))
        case "[":
            i += 1
            var opts = String.UnicodeScalarView()
            while let d = peek, d != "]" { opts.append(d); i += 1 }
            guard peek == "]" else { throw error("unterminated options: a closing ] is missing", at: start) }
            i += 1
            let text = String(opts).lowercased()
            guard !text.isEmpty, text.allSatisfy({ $0 == "c" || $0 == "d" }) else {
                throw error("unknown comparison options [\(String(opts))]: use [c], [d] or [cd]", at: start)
            }
            return token(.options(text))
        case "*", "/":
            i += 1
            return token(.op(String(c)))
        case "+":
            // Always an operator: a sign before a number is read by the parser.
            i += 1
            return token(.op("+"))
        case "-" where afterOperand || !(i + 1 < scalars.count && Self.startsNumber(scalars[i + 1])):
            // After an operand, or before anything but a digit: an operator
            // (`budget - 1`, `-(a + b)`, `- budget`); else a negative number's sign.
            i += 1
            return token(.op("-"))
        case "=", "!", "<", ">", "&", "|":
            i += 1
            let two = peek.map { String(c) + String($0) }
            if let two, ["==", "!=", "<=", ">=", "&&", "||", "<>", "=<", "=>"].contains(two) {
                i += 1
                switch two {
                case "<>": return token(.op("!="))
                case "=<": return token(.op("<="))
                case "=>": return token(.op(">="))
                default: return token(.op(two))
                }
            }
            switch c {
            case "=": return token(.op("=="))
            case "!", "<", ">": return token(.op(String(c)))
            default: throw error("unexpected \(String(c)): did you mean \(String(c))\(String(c))?", at: start)
            }
        default:
            // `.@count` after SUBQUERY(…): a key path's tail, not a number.
            if c == ".", i + 1 < scalars.count, scalars[i + 1] == "@" {
                var name = String.UnicodeScalarView()
                while let d = peek, Self.isIdentifierPart(d) { name.append(d); i += 1 }
                return token(.identifier(String(name)))
            }
            if c == "-" || c == "+" || c == "." || c.properties.numericType != nil && c.isASCII {
                return token(.number(try number()))
            }
            if Self.isIdentifierStart(c) {
                var name = String.UnicodeScalarView()
                while let d = peek, Self.isIdentifierPart(d) { name.append(d); i += 1 }
                // A function's name ends with ":" (`uppercase:`, `modulus:by:`).
                while peek == ":" {
                    name.append(":")
                    i += 1
                    var part = String.UnicodeScalarView()
                    var j = i
                    while j < scalars.count, Self.isIdentifierPart(scalars[j]) { part.append(scalars[j]); j += 1 }
                    guard !part.isEmpty, j < scalars.count, scalars[j] == ":" else { break }
                    name.append(contentsOf: part)
                    i = j
                }
                if name.last == ":" { return token(.function(String(name))) }
                return token(.identifier(String(name)))
            }
            throw error("unexpected character \(JSONText.quoted(String(c)))", at: start)
        }
    }

    private static func startsNumber(_ c: Unicode.Scalar) -> Bool {
        c == "." || (c.isASCII && c.properties.numericType != nil)
    }

    private mutating func number() throws -> String {
        let start = i
        var text = ""
        if let c = peek, c == "-" || c == "+" { text.unicodeScalars.append(c); i += 1 }
        var digits = 0
        while let c = peek, c.isASCII,
            c.properties.numericType != nil || c == "." || c == "e" || c == "E"
                || ((c == "-" || c == "+") && (text.last == "e" || text.last == "E"))
        {
            if c.properties.numericType != nil { digits += 1 }
            text.unicodeScalars.append(c)
            i += 1
        }
        guard digits > 0, let value = Double(text) else {
            throw error("\(JSONText.quoted(text)) is not a number", at: start)
        }
        guard value.isFinite else {
            throw error("\(JSONText.quoted(text)) is too large for a number (at most about 1.8e308)", at: start)
        }
        return text
    }

    private mutating func string(quote: Unicode.Scalar) throws -> String {
        let start = i
        i += 1
        var out = String.UnicodeScalarView()
        while let c = peek {
            i += 1
            if c == quote { return String(out) }
            guard c == "\\" else { out.append(c); continue }
            guard let e = peek else { break }
            i += 1
            switch e {
            case "n": out.append("\n")
            case "t": out.append("\t")
            case "r": out.append("\r")
            case "0": out.append("\0")
            case "\\", "\"", "'": out.append(e)
            case "u":
                guard i + 4 <= scalars.count,
                    let v = UInt32(String(String.UnicodeScalarView(scalars[i..<i + 4])), radix: 16)
                else { throw error("\\u must be followed by four hexadecimal digits", at: i - 2) }
                i += 4
                var value = v
                if (0xD800..<0xDC00).contains(v), i + 6 <= scalars.count, scalars[i] == "\\", scalars[i + 1] == "u",
                    let lo = UInt32(String(String.UnicodeScalarView(scalars[i + 2..<i + 6])), radix: 16),
                    (0xDC00..<0xE000).contains(lo)
                {
                    value = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
                    i += 6
                }
                guard let s = Unicode.Scalar(value) else {
                    throw error("\\u\(String(v, radix: 16)) is not a Unicode character", at: i - 6)
                }
                out.append(s)
            default:
                throw error(
                    "unknown escape \\\(String(e)) in a string: use \\\", \\', \\\\, \\n, \\t or \\uXXXX",
                    at: i - 2)
            }
        }
        throw error("unterminated string: a closing \(String(quote)) is missing", at: start)
    }
}
