import Foundation

/// A fetch's answer: its records.
///
/// ```swift
/// let page = try JSONDecoder().decode(RecordsAnswer.self, from: body)
/// ```
public struct RecordsAnswer: Sendable, Hashable, Codable {
    /// The records.
    ///
    /// ```swift
    /// print(page.records.count)
    /// ```
    public var records: [RecordObject]

    package init(records: [RecordObject]) { self.records = records }
}
