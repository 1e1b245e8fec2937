/// Records that share the values of some fields.
public struct DuplicateGroup: Sendable, Hashable {
    /// The shared values, one per field of the request.
    public var values: [Value]
    /// The identifiers of the group's records, in storage order (first stored first).
    public var identifiers: [Identifier]

    /// Creates a group.
    public init(values: [Value], identifiers: [Identifier]) {
        self.values = values
        self.identifiers = identifiers
    }
}
