import Foundation

/// `GET /v1/watches`'s answer.
///
/// ```swift
/// let list = try JSONDecoder().decode(WatchList.self, from: body)
/// ```
public struct WatchList: Sendable, Hashable, Codable {
    /// The watched folders.
    ///
    /// ```swift
    /// print(list.watches.count)
    /// ```
    public var watches: [Watch]

    /// A list of `watches`, as the daemon answers it.
    ///
    /// ```swift
    /// let list = WatchList(watches: try await client.watches())
    /// ```
    public init(watches: [Watch]) { self.watches = watches }
}
