import Foundation

/// `POST .../duplicates`'s answer: the groups of records that share values.
///
/// ```swift
/// let answer = try JSONDecoder().decode(DuplicatesAnswer.self, from: body)
/// ```
public struct DuplicatesAnswer: Sendable, Hashable, Codable {
    /// The groups.
    ///
    /// ```swift
    /// print(answer.groups.count)
    /// ```
    public var groups: [DuplicateGroup]

    package init(groups: [DuplicateGroup]) { self.groups = groups }
}
