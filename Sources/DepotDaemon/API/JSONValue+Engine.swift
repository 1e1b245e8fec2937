package import DepotEngine
package import DepotWire

/// The control API's JSON values as the engine's: the arguments of a
/// predicate and the values an update sets are scalars (DESIGN §7).
/// (`Value` alone, in here, is the dictionary literal's element: JSONValue.)
extension JSONValue {
    /// The engine's value of a scalar; nil for an array or an object.
    package var scalar: DepotEngine.Value? {
        switch self {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .array, .object: nil
        }
    }

    /// The JSON value of an engine value.
    package init(_ value: DepotEngine.Value) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        }
    }

    /// The JSON value of an identifier: a single key's value, a compound
    /// key's values as an array (``DepotEngine/Identifier/json``).
    package init(_ identifier: Identifier) {
        self =
            identifier.values.count == 1
            ? JSONValue(identifier.values[0]) : .array(identifier.values.map(JSONValue.init))
    }

    /// The engine's values of `values`, named under `key` (`arguments`, `set`).
    ///
    /// - Throws: ``DepotError/Code/invalidArgument`` naming the first value that is not a scalar.
    package static func scalars(_ values: [String: JSONValue]?, key: String) throws -> [String: DepotEngine.Value] {
        var out: [String: DepotEngine.Value] = [:]
        for (name, value) in (values ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let scalar = value.scalar else {
                throw DepotError(
                    .invalidArgument, "\"\(key).\(name)\" must be a string, number, boolean or null, not \(value.kind)")
            }
            out[name] = scalar
        }
        return out
    }

    /// What kind of value this is, for errors.
    private var kind: String {
        switch self {
        case .array: "an array"
        case .object: "an object"
        default: "a scalar"
        }
    }
}
