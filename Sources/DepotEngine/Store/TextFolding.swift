import Foundation
import GRDB

/// Case and diacritic folding for the `[c]`, `[d]` and `[cd]` predicate options.
///
/// SQLite's own `LIKE` and `lower()` fold ASCII only; the engine registers
/// `depot_fold(text, flags)` on every connection so that `CONTAINS[cd]
/// "zurich"` finds "Zürich". The predicate's own value is folded in Swift with
/// the same function before it is bound.
enum TextFolding {
    /// Fold case.
    static let caseInsensitive = 1
    /// Fold diacritics.
    static let diacriticInsensitive = 2

    static func fold(_ s: String, flags: Int) -> String {
        var r = s
        if flags & diacriticInsensitive != 0, r.unicodeScalars.contains(where: { !$0.isASCII }) {
            var scalars = String.UnicodeScalarView()
            for scalar in r.decomposedStringWithCanonicalMapping.unicodeScalars
            where scalar.properties.generalCategory != .nonspacingMark {
                scalars.append(scalar)
            }
            r = String(scalars)
        }
        if flags & caseInsensitive != 0 { r = r.lowercased() }
        return r
    }

    static let function = DatabaseFunction("depot_fold", argumentCount: 2, pure: true) { values in
        guard let s = String.fromDatabaseValue(values[0]) else { return nil }
        return fold(s, flags: Int.fromDatabaseValue(values[1]) ?? 0)
    }
}
