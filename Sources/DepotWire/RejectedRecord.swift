import Foundation

/// A line of `GET /v1/jobs/ID/rejects`: a record an import refused, where
/// it stood in the input, and why.
///
/// ```swift
/// for try await r in client.rejects(of: job.id) { print("line \(r.line): \(r.reason)") }
/// ```
public struct RejectedRecord: Sendable, Hashable, Codable {
    /// The input's line the record starts on.
    ///
    /// ```swift
    /// print(r.line)
    /// ```
    public var line: Int
    /// The field at fault, if one is.
    ///
    /// ```swift
    /// print(r.field ?? "the record")
    /// ```
    public var field: String?
    /// Why, in a sentence.
    ///
    /// ```swift
    /// print(r.reason)
    /// ```
    public var reason: String
    /// The value refused, if one was.
    ///
    /// ```swift
    /// print(r.value ?? "")
    /// ```
    public var value: String?

    package init(line: Int, field: String?, reason: String, value: String?) {
        self.line = line
        self.field = field
        self.reason = reason
        self.value = value
    }
}
