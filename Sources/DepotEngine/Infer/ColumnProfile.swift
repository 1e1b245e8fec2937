/// What inference learns of one column over the whole file: the narrowest
/// type every value fits, when and by which value it widened, whether it
/// is ever null and how null was spelled.
///
/// A value fits a type when the import would read it as that type
/// (``FieldParser``), so that a file imported with its inferred entity
/// rejects nothing the file itself does not break. Besides:
/// - digits with a leading zero (`007`) keep a field a string, as does an
///   integer beyond 64 bits (a double would lose its digits);
/// - a boolean is inferred from words (`true`, `no`, `t`…), never from
///   `1`/`0` alone;
/// - null spellings (`NA`, `N/A`, `NULL`, `-`, a quoted empty string) are
///   nulls of a field whose other values are typed, and plain values of a
///   text field;
/// - in JSON, a string stays a string (or a date), a number is an int or a
///   double, an object or array is `json`, and kinds that the import cannot
///   put in one column (a boolean and a string) make `json`.
struct ColumnProfile {
    /// The types still possible, narrowest first.
    private var canBool = true
    private var sawBoolWord = false
    private var canInt = true
    private var canDouble = true
    private var canDate = true
    private var canJSON = true
    /// JSON members: the kinds met.
    private var jsonKinds: Set<JSONKind> = []

    /// Values that are not null.
    private(set) var values = 0
    /// Nulls: empty or missing.
    private(set) var empties = 0
    /// Null spellings met, each with its count (a text field's too: they
    /// are only nulls if the field ends up typed).
    private(set) var spellings: [String: Int] = [:]
    /// The last widening: the type before it, the line and the value.
    private(set) var evidence: (type: FieldType, line: Int, value: String)?
    /// The type after the values so far (`nil` before any).
    private(set) var current: FieldType?

    enum JSONKind: Hashable {
        case string, date, int, double, bool, structure
    }

    /// The field's type: the narrowest all values fit; a string when none
    /// was met.
    var type: FieldType { current ?? .string }

    /// Whether the field can be null: an empty cell, a missing member, or a
    /// null spelling in a typed field.
    var isOptional: Bool {
        empties > 0 || (type != .string && !spellings.isEmpty) || (values == 0 && spellings.isEmpty)
    }

    /// The nulls of the field by spelling (`""` for an empty cell).
    var nulls: [String: Int] {
        var out: [String: Int] = [:]
        if empties > 0 { out[""] = empties }
        if type != .string { for (s, n) in spellings { out[s, default: 0] += n } }
        return out
    }

    /// Notes an empty cell or a missing member.
    mutating func addNull(_ n: Int = 1) { empties += n }

    /// Notes one CSV cell's bytes (not null), read at `line`.
    mutating func add(_ b: UnsafeBufferPointer<UInt8>, quotedEmpty: Bool, line: Int) {
        if quotedEmpty {
            spellings["\"\"", default: 0] += 1
            return
        }
        if let s = NullSpelling.spelling(b) {
            // A typed field's null; a text field's value all the same for
            // the type (it already fits a string).
            spellings[s, default: 0] += 1
            return
        }
        values += 1
        let before = current
        if canBool {
            if BoolWords.isWord(b) {
                sawBoolWord = true
            } else if FieldParser.parseBool(b) == nil {
                canBool = false
            }
        }
        if canInt || canDouble {
            let leadingZero = Self.hasLeadingZero(b)
            if canInt, leadingZero || FieldParser.parseInt(b) == nil { canInt = false }
            if canDouble, !canInt {
                if leadingZero || Self.isLongInteger(b) || FieldParser.parseDouble(b) == nil { canDouble = false }
            }
        }
        if canDate, DateValue.canonical(utf8: FieldParser.trimmed(b)) == nil { canDate = false }
        if canJSON {
            let t = FieldParser.trimmed(b)
            if t.isEmpty || (t[0] != UInt8(ascii: "{") && t[0] != UInt8(ascii: "[")) || JSONSyntax.validate(b) != nil {
                canJSON = false
            }
        }
        let now: FieldType =
            canBool && sawBoolWord
            ? .bool
            : canInt ? .int : canDouble ? .double : canDate ? .date : canJSON ? .json : .string
        if let before, before != now {
            evidence = (before, line, Self.shown(b))
        }
        current = now
    }

    /// Notes one JSON member of `kind`, its value's content in `b`.
    mutating func add(json kind: JSONRecordReader.Kind, _ b: UnsafeBufferPointer<UInt8>, line: Int) {
        let k: JSONKind
        switch kind {
        case .null:
            empties += 1
            return
        case .string: k = DateValue.canonical(utf8: b) != nil ? .date : .string
        case .number: k = FieldParser.parseInt(b) != nil ? .int : .double
        case .true, .false: k = .bool
        case .object, .array: k = .structure
        }
        values += 1
        let before = current
        jsonKinds.insert(k)
        let now = Self.type(of: jsonKinds)
        if let before, before != now {
            evidence = (before, line, Self.shown(b))
        }
        current = now
    }

    /// The one type the import reads every kind in `kinds` as.
    static func type(of kinds: Set<JSONKind>) -> FieldType {
        if kinds.contains(.structure) { return .json }
        if kinds.contains(.bool) { return kinds.count == 1 ? .bool : .json }
        if kinds.isSubset(of: [.int]) { return .int }
        if kinds.isSubset(of: [.int, .double]) { return .double }
        if kinds == [.date] { return .date }
        return .string
    }

    /// `0` then a digit, after an optional sign: an identifier-like code.
    static func hasLeadingZero(_ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        let b = FieldParser.trimmed(raw)
        var i = 0
        if i < b.count, b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") { i += 1 }
        return i + 1 < b.count && b[i] == UInt8(ascii: "0")
            && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i + 1])
    }

    /// Digits alone, too many for a 64-bit integer.
    static func isLongInteger(_ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        let b = FieldParser.trimmed(raw)
        guard b.count >= 19 else { return false }
        var i = 0
        if b[0] == UInt8(ascii: "-") || b[0] == UInt8(ascii: "+") { i = 1 }
        guard i < b.count else { return false }
        for k in i..<b.count where !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[k]) { return false }
        return FieldParser.parseInt(b) == nil
    }

    /// A value as evidence shows it: at most 60 characters.
    static func shown(_ b: UnsafeBufferPointer<UInt8>) -> String {
        let text = String(decoding: b.prefix(240), as: UTF8.self)
        let cut = text.count > 60 ? String(text.prefix(60)) + "…" : text
        return cut
    }
}
