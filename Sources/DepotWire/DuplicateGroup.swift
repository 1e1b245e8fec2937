import Foundation

/// Records that share the values of some fields.
///
/// ```swift
/// group.values          // ["Week in Paris", "2025-04-01"]
/// group.identifiers     // ["T002", "T004"], first stored first
/// ```
public struct DuplicateGroup: Sendable, Hashable, Codable {
    /// The shared values, one per field asked for.
    ///
    /// ```swift
    /// print(group.values.map(\.text).joined(separator: ", "))
    /// ```
    public var values: [JSONValue]
    /// The identifiers of the group's records, in storage order.
    ///
    /// ```swift
    /// let extra = group.identifiers.dropFirst()     // all but the first stored
    /// ```
    public var identifiers: [JSONValue]

    package init(values: [JSONValue], identifiers: [JSONValue]) {
        self.values = values
        self.identifiers = identifiers
    }
}
