import Foundation

/// A fetch's answer with `section_by`: the records by the section's value.
///
/// ```swift
/// let sections = try JSONDecoder().decode(SectionsAnswer.self, from: body)
/// ```
public struct SectionsAnswer: Sendable, Hashable, Codable {
    /// A section: its key, and its records.
    ///
    /// ```swift
    /// for s in sections.sections { print(s.key, s.records.count) }
    /// ```
    public struct Section: Sendable, Hashable, Codable {
        /// The section's value.
        ///
        /// ```swift
        /// print(section.key)
        /// ```
        public var key: JSONValue
        /// Its records.
        ///
        /// ```swift
        /// print(section.records.count)
        /// ```
        public var records: [RecordObject]

        package init(key: JSONValue, records: [RecordObject]) {
            self.key = key
            self.records = records
        }
    }

    /// The sections, in order.
    ///
    /// ```swift
    /// print(sections.sections.count)
    /// ```
    public var sections: [Section]

    package init(sections: [Section]) { self.sections = sections }
}
