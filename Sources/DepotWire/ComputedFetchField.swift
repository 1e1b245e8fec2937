import Foundation

/// A value a fetch computes for each record (DESIGN §17): an expression
/// in the predicates' syntax, sent under `name`.
///
/// ```swift
/// let total = ComputedFetchField(name: "total", expression: "price * qty")
/// ```
public struct ComputedFetchField: Sendable, Hashable, Codable {
    /// The key it is sent under.
    public var name: String
    /// The expression.
    public var expression: String

    /// A computed field.
    ///
    /// ```swift
    /// let up = ComputedFetchField(name: "code", expression: "uppercase:(code)")
    /// ```
    public init(name: String, expression: String) {
        self.name = name
        self.expression = expression
    }
}
