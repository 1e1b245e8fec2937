import Foundation

/// The body of `POST .../export`: the records to stream, and as what.
///
/// ```swift
/// var query = ExportBody()
/// query.format = "csv"
/// ```
public struct ExportBody: Sendable, Hashable, Codable {
    /// The predicate.
    ///
    /// ```swift
    /// query.where = "budget > 1000"
    /// ```
    public var `where`: String?
    /// Values for the predicate's placeholders.
    ///
    /// ```swift
    /// query.arguments = ["min": 1000]
    /// ```
    public var arguments: [String: JSONValue]?
    /// The fields, in order.
    ///
    /// ```swift
    /// query.fields = ["id", "name"]
    /// ```
    public var fields: [String]?
    /// `ndjson` (the default) or `csv`.
    ///
    /// ```swift
    /// query.format = "ndjson"
    /// ```
    public var format: String?
    /// Refused here: an export job embeds related records.
    ///
    /// ```swift
    /// query.prefetch = nil
    /// ```
    public var prefetch: [String]?

    /// An export of every record as NDJSON.
    ///
    /// ```swift
    /// let all = ExportBody()
    /// ```
    public init() {}
}
