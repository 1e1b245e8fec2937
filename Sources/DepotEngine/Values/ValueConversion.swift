/// Converts values given through the API to a field's stored form.
package enum ValueConversion {
    /// `value` as field `field` stores it.
    ///
    /// Integers widen to doubles; a `date` string becomes canonical UTC text;
    /// a `json` field takes JSON text as a string.
    ///
    /// - Throws: ``DepotError/Code/typeMismatch`` naming the field and the value.
    package static func convert(_ value: Value, to field: Field) throws -> Value {
        let name = JSONText.quoted(field.name)
        switch (field.type, value) {
        case (_, .null):
            guard field.isOptional else {
                throw DepotError(.typeMismatch, "field \(name) is required and cannot be set to null")
            }
            return .null
        case (.double, .double(let d)) where !d.isFinite:
            // Every write path refuses infinity and NaN: SQLite stores ±Inf
            // but JSON has no text for it, so reads would serve null (issue 51).
            throw DepotError(
                .typeMismatch,
                "field \(name) is double, and \(d.isNaN ? "NaN" : d < 0 ? "-infinity" : "infinity") "
                    + "is not a finite number")
        case (.string, .string), (.json, .string), (.int, .int), (.double, .double), (.bool, .bool):
            return value
        case (.double, .int(let i)): return .double(Double(i))
        case (.int, .double(let d)) where d == d.rounded() && abs(d) < 9.2e18: return .int(Int64(d))
        case (.date, .string(let s)):
            guard let canonical = DateValue.canonical(s) else {
                throw DepotError(
                    .typeMismatch,
                    "field \(name) is a date, but \(JSONText.quoted(s)) is not an "
                        + "ISO 8601 date or date-time (like 2025-03-14 or 2025-03-14T09:30:00+01:00)")
            }
            return .string(canonical)
        default:
            throw DepotError(
                .typeMismatch,
                "field \(name) is \(field.type.rawValue), but \(value.kindName) "
                    + "\(value) was given")
        }
    }
}
