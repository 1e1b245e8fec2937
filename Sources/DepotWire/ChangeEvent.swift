import Foundation

/// An event of a live fetch with `"changes": true`: the first `result`,
/// then `changes` after each commit that changed it, or `history_expired`.
///
/// ```swift
/// let event = try JSONDecoder().decode(ChangeEvent.self, from: Data(line.utf8))
/// ```
public struct ChangeEvent: Sendable, Hashable, Codable {
    /// `result`, `changes`, `history_expired` or `entity_dropped` (the last
    /// event of a live fetch whose entity was dropped).
    ///
    /// ```swift
    /// if event.type == "history_expired" { print(event.message ?? "") }
    /// ```
    public var type: String
    /// The newest token the event reflects.
    ///
    /// ```swift
    /// print(event.token ?? "")
    /// ```
    public var token: String?
    /// The result (`result`).
    ///
    /// ```swift
    /// print(event.records?.count ?? 0)
    /// ```
    public var records: [RecordObject]?
    /// Records that entered the result (`changes`).
    ///
    /// ```swift
    /// print(event.inserted?.count ?? 0)
    /// ```
    public var inserted: [RecordObject]?
    /// Records in it whose fetched fields changed (`changes`).
    ///
    /// ```swift
    /// print(event.updated?.count ?? 0)
    /// ```
    public var updated: [RecordObject]?
    /// Identifiers that left it (`changes`).
    ///
    /// ```swift
    /// print(event.deleted ?? [])
    /// ```
    public var deleted: [JSONValue]?
    /// Why (`history_expired`).
    ///
    /// ```swift
    /// print(event.message ?? "")
    /// ```
    public var message: String?

    /// The event that ends a live fetch whose history was pruned under it.
    package static func historyExpired(_ message: String) -> ChangeEvent {
        ChangeEvent(type: "history_expired", message: message)
    }

    package init(
        type: String, token: String? = nil, records: [RecordObject]? = nil, inserted: [RecordObject]? = nil,
        updated: [RecordObject]? = nil, deleted: [JSONValue]? = nil, message: String? = nil
    ) {
        self.type = type
        self.token = token
        self.records = records
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.message = message
    }
}
