/// One save that changed data, with its changes: the persistent-history
/// transaction analog.
public struct HistoryTransaction: Sendable, Hashable {
    /// The transaction's token; ask for the history after it to continue.
    public var token: HistoryToken
    /// When it was committed, as canonical UTC text (`2025-03-14T09:30:00.000Z`).
    public var timestamp: String
    /// Who made it.
    public var author: String
    /// The job it belongs to, if any.
    public var job: String?
    /// Its changes, in the order they were made.
    public var changes: [HistoryChange]
    /// More of its changes follow, after ``token`` (a place inside it): a
    /// page holds at most so many changes (issue #35).
    public var continues = false

    package init(token: HistoryToken, timestamp: String, author: String, job: String?, changes: [HistoryChange]) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.job = job
        self.changes = changes
    }
}
