import Foundation

/// An event of a live fetch (`"watch": true`): the result again, after a
/// commit that changed it, with the history token it reflects.
///
/// ```swift
/// let event = try JSONDecoder().decode(WatchEvent.self, from: Data(line.utf8))
/// ```
public struct WatchEvent: Sendable, Hashable, Codable {
    /// The newest token the result reflects.
    ///
    /// ```swift
    /// print(event.token ?? "no history yet")
    /// ```
    public var token: String?
    /// The result: `{"records": [...]}`, `{"count": n}` or `{"identifiers": [...]}`.
    ///
    /// ```swift
    /// print(event.result["count"] ?? .null)
    /// ```
    public var result: JSONValue

    package init(token: String?, result: JSONValue) {
        self.token = token
        self.result = result
    }
}
