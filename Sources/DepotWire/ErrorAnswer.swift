import Foundation

/// An error as the daemon answers it: `{"error": {"code", "message", "position"}}`.
///
/// ```swift
/// let failure = try JSONDecoder().decode(ErrorAnswer.self, from: body)
/// print(failure.error.code, failure.error.message)
/// ```
public struct ErrorAnswer: Sendable, Hashable, Codable {
    /// What went wrong.
    ///
    /// ```swift
    /// print(failure.error.message)
    /// ```
    public struct Failure: Sendable, Hashable, Codable {
        /// The error's code (`invalid_argument`, `not_found`, ...; docs/api.md).
        ///
        /// ```swift
        /// if failure.error.code == "conflict" { retry() }
        /// ```
        public var code: String
        /// Why, in a sentence.
        ///
        /// ```swift
        /// print(failure.error.message)
        /// ```
        public var message: String
        /// For a predicate: the 1-based character where it went wrong.
        ///
        /// ```swift
        /// if let at = failure.error.position { print("at character", at) }
        /// ```
        public var position: Int?
        /// For a refused save: every failing change, by index.
        ///
        /// ```swift
        /// for change in failure.error.changes ?? [] { print(change.index, change.code) }
        /// ```
        public var changes: [ChangeFailure]?

        package init(code: String, message: String, position: Int?, changes: [ChangeFailure]? = nil) {
            self.code = code
            self.message = message
            self.position = position
            self.changes = changes
        }
    }

    /// The error.
    ///
    /// ```swift
    /// print(failure.error.code)
    /// ```
    public var error: Failure

    package init(error: Failure) { self.error = error }
}
