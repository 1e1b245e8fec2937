import Foundation

/// `GET /v1/watches`: the watched folders, and what each holds.
///
/// ```swift
/// for w in try await client.watches() { print(w.path, w.pending) }
/// ```
public struct Watch: Sendable, Hashable, Codable {
    /// The folder.
    ///
    /// ```swift
    /// print(watch.path)
    /// ```
    public var path: String
    /// The store its files go to.
    ///
    /// ```swift
    /// print(watch.store)
    /// ```
    public var store: String
    /// The entity.
    ///
    /// ```swift
    /// print(watch.entity)
    /// ```
    public var entity: String
    /// `auto`, `csv`, `tsv`, `ndjson` or `json`.
    ///
    /// ```swift
    /// print(watch.format)
    /// ```
    public var format: String
    /// The conflict policy of its imports.
    ///
    /// ```swift
    /// print(watch.onConflict)
    /// ```
    public var onConflict: String
    /// When its imports fail for their rejects.
    ///
    /// ```swift
    /// print(watch.maxRejects)
    /// ```
    public var maxRejects: String
    /// `check` or `defer`.
    ///
    /// ```swift
    /// print(watch.references)
    /// ```
    public var references: String
    /// Whether an imported file is deleted (else moved to `.done`).
    ///
    /// ```swift
    /// print(watch.deleteAfter)
    /// ```
    public var deleteAfter: Bool
    /// Files waiting or importing.
    ///
    /// ```swift
    /// print(watch.pending)
    /// ```
    public var pending: Int
    /// Files in `.done`.
    ///
    /// ```swift
    /// print(watch.done)
    /// ```
    public var done: Int
    /// Files in `.failed`.
    ///
    /// ```swift
    /// print(watch.failed)
    /// ```
    public var failed: Int

    package init(
        path: String, store: String, entity: String, format: String, onConflict: String, maxRejects: String,
        references: String, deleteAfter: Bool, pending: Int, done: Int, failed: Int
    ) {
        self.path = path
        self.store = store
        self.entity = entity
        self.format = format
        self.onConflict = onConflict
        self.maxRejects = maxRejects
        self.references = references
        self.deleteAfter = deleteAfter
        self.pending = pending
        self.done = done
        self.failed = failed
    }

    enum CodingKeys: String, CodingKey {
        case path, store, entity, format, onConflict = "on_conflict", maxRejects = "max_rejects", references
        case deleteAfter = "delete_after", pending, done, failed
    }
}
