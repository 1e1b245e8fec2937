/// The identifier of one record: a single key, or a compound key's values in
/// declared order.
///
/// Wherever an identifier is shown (the API, `depotctl`, history) a single
/// key is its JSON value and a compound key the JSON array of its values,
/// e.g. `[4, 1950, "Male", "0-4"]`.
///
/// For example:
///
/// ```swift
/// Identifier([.string("t1")]).json                    // "\"t1\""
/// Identifier([.int(4), .string("Male")]).json         // "[4,\"Male\"]"
/// ```
public struct Identifier: Sendable, Hashable, CustomStringConvertible {
    /// The key's values, one per identifier field.
    public let values: [Value]

    /// Creates an identifier from its values.
    public init(_ values: [Value]) { self.values = values }

    /// The most bytes of a text identifier value: its URL, percent-encoded,
    /// stays under the daemon's 16 KiB request target (DESIGN §16).
    public static let maxTextBytes = 4_096

    /// Why `value` cannot be (part of) a new record's identifier, or `nil`:
    /// text is 1 to ``maxTextBytes`` bytes, the one rule of every write path
    /// (saves, imports, record routes, processor commits; issue 51: `""` was
    /// saved but had no URL, and an identifier of 20 KB had none either).
    public static func problem(_ value: Value) -> String? {
        guard case .string(let text) = value else { return nil }
        if text.isEmpty { return "an identifier is never empty text" }
        let bytes = text.utf8.count
        if bytes > maxTextBytes {
            return "an identifier is at most \(maxTextBytes) bytes of text, not \(bytes)"
        }
        return nil
    }

    /// The identifier as JSON text.
    public var json: String {
        var out = ""
        Identifier.appendJSON(values, to: &out)
        return out
    }

    /// The identifier as JSON text; see ``json``.
    public var description: String { json }

    /// Appends the JSON text of an identifier made of `values` to `out`.
    package static func appendJSON(_ values: [Value], to out: inout String) {
        if values.count == 1 {
            JSONText.append(values[0], to: &out)
            return
        }
        out.append("[")
        for (i, v) in values.enumerated() {
            if i > 0 { out.append(",") }
            JSONText.append(v, to: &out)
        }
        out.append("]")
    }

    /// Parses an identifier from its JSON text, given how many fields the key has.
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` when the text is not a
    ///   JSON scalar (single key) or an array of `count` scalars (compound key).
    public init(json text: String, fieldCount: Int) throws {
        guard let parsed = MiniJSON.parse(text) else {
            throw DepotError(.invalidArgument, "identifier \(text) is not valid JSON")
        }
        switch parsed {
        case .scalar(let v) where fieldCount == 1:
            self.values = [v]
        case .array(let items) where items.count == fieldCount && fieldCount > 1:
            self.values = items
        default:
            throw DepotError(
                .invalidArgument,
                fieldCount == 1
                    ? "identifier \(text) should be a single JSON value"
                    : "identifier \(text) should be a JSON array of \(fieldCount) values")
        }
    }
}
