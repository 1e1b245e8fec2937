import DepotEngine

/// The one reading of each job setting that arrives as text, whatever its
/// source: a `POST /v1/jobs` body, a persisted job record, an upload's query
/// or a `[[watch]]` table. Each returns the engine's type or throws
/// ``Invalid`` with what the setting accepts; the caller names the setting.
enum JobSetting {
    /// Why a setting's text was refused: what it must be.
    struct Invalid: Error {
        var expectation: String
    }

    /// `format` of an import: `nil` for `auto` (told by the file's extension).
    static func importFormat(_ text: String) throws(Invalid) -> ImportOptions.Format? {
        if text == "auto" { return nil }
        guard let format = ImportOptions.Format(rawValue: text) else {
            throw Invalid(expectation: "must be auto, csv, tsv, ndjson or json")
        }
        return format
    }

    /// `on_conflict` of an import.
    static func conflictPolicy(_ text: String) throws(Invalid) -> ConflictPolicy {
        guard let policy = ConflictPolicy(rawValue: text) else {
            throw Invalid(expectation: "must be upsert, replace, skip or fail")
        }
        return policy
    }

    /// `max_rejects` of an import: a count ("1000"), a fraction below 1
    /// ("0.01") or a percentage ("1%").
    static func rejectLimit(_ text: String) throws(Invalid) -> ImportOptions.RejectLimit {
        if let n = Int(text), n >= 0 { return .count(n) }
        if text.hasSuffix("%"), let p = Double(text.dropLast()), p >= 0, p <= 100 { return .fraction(p / 100) }
        if let f = Double(text), f >= 0, f < 1 { return .fraction(f) }
        throw Invalid(expectation: "must be a count (1000), a fraction below 1 (0.01) or a percentage (\"1%\")")
    }

    /// `references` of an import (DESIGN §12): `check` (the default) rejects
    /// a row whose reference names no record; `defer` keeps it. True for defer.
    static func references(_ text: String) throws(Invalid) -> Bool {
        switch text {
        case "check": return false
        case "defer": return true
        default: throw Invalid(expectation: "must be check or defer")
        }
    }

    /// `delimiter` of an import: one character, `\t` or a tab for a tab;
    /// not a quote, a line end or a letter or digit.
    static func delimiter(_ text: String) throws(Invalid) -> UInt8 {
        let t = text == "\\t" || text == "tab" ? "\t" : text
        guard t.utf8.count == 1, let b = t.utf8.first, b < 0x80, b != 0x22, b != 0x27, b != 0x0A, b != 0x0D,
            !(UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b | 0x20),
            !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
        else {
            throw Invalid(expectation: "must be one character, like , ; | or \\t (a tab), not a quote, letter or digit")
        }
        return b
    }

    /// `escape` of an import: `\\`, the one escape files are written with.
    static func escape(_ text: String) throws(Invalid) -> UInt8 {
        guard text == "\\" else { throw Invalid(expectation: "must be \\ (a backslash), the escape before a quote") }
        return 0x5C
    }

    /// `quote` of an import: `"` or `'`.
    static func quote(_ text: String) throws(Invalid) -> UInt8 {
        switch text {
        case "\"": return 0x22
        case "'": return 0x27
        default: throw Invalid(expectation: "must be \" or '")
        }
    }

    /// `quotes` of an import: true for lenient.
    static func lenientQuotes(_ text: String) throws(Invalid) -> Bool {
        switch text {
        case "strict": return false
        case "lenient": return true
        default: throw Invalid(expectation: "must be strict or lenient")
        }
    }

    /// `encoding` of an import: true for Latin-1.
    static func latin1(_ text: String) throws(Invalid) -> Bool {
        switch text.lowercased() {
        case "utf-8", "utf8", "utf-8-bom": return false
        case "latin-1", "latin1", "iso-8859-1": return true
        default: throw Invalid(expectation: "must be utf-8 or latin-1")
        }
    }

    /// `true` or `false`, as a query parameter gives it.
    static func flag(_ text: String) throws(Invalid) -> Bool {
        switch text {
        case "true", "1": return true
        case "false", "0": return false
        default: throw Invalid(expectation: "must be true or false")
        }
    }

    /// `on_conflict` of a revert.
    static func revertConflict(_ text: String) throws(Invalid) -> RevertConflictPolicy {
        guard let policy = RevertConflictPolicy(rawValue: text) else {
            throw Invalid(expectation: "must be skip, fail or force")
        }
        return policy
    }

    /// `keep` of a dedupe.
    static func keep(_ text: String) throws(Invalid) -> DuplicateResolution {
        guard let keep = DuplicateResolution(rawValue: text) else {
            throw Invalid(expectation: "must be keep-first or keep-last")
        }
        return keep
    }

    /// `format` of an export.
    static func exportFormat(_ text: String) throws(Invalid) -> JobSpec.ExportFormat {
        guard let format = JobSpec.ExportFormat(rawValue: text) else {
            throw Invalid(expectation: "must be ndjson or csv")
        }
        return format
    }

    /// `older_than` of a prune: a duration from 0s to 36500d.
    static func age(_ text: String) throws(Invalid) -> Duration {
        do throws(DurationText.Invalid) {
            return try DurationText.parse(text, in: DurationText.retention)
        } catch {
            throw Invalid(expectation: error.reason)
        }
    }

    /// A processor's `lease`: a duration from 1s to 1d.
    static func lease(_ text: String) throws(Invalid) -> Duration {
        do throws(DurationText.Invalid) {
            return try DurationText.parse(text, in: .seconds(1)...(.seconds(86_400)))
        } catch {
            throw Invalid(expectation: error.reason)
        }
    }

    /// Reads `text` for the setting `name` of a job; a refusal is the
    /// request's `invalid_argument`, naming the setting and the text.
    static func read<T>(_ name: String, _ text: String, _ reader: (String) throws(Invalid) -> T) throws -> T {
        do throws(Invalid) {
            return try reader(text)
        } catch {
            throw DepotError(.invalidArgument, "\(name) \(error.expectation), not \(JSONText.quoted(text))")
        }
    }
}

extension ImportOptions.RejectLimit {
    /// The limit as `max_rejects` text, which ``JobSetting/rejectLimit(_:)`` reads back.
    var text: String {
        switch self {
        case .count(let n): String(n)
        case .fraction(let f): String(f)
        }
    }
}
