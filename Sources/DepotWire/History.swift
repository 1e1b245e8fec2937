import Foundation

/// One save that changed data: its token, when, who, which job, and one
/// change per record touched (DESIGN §2, §11).
///
/// ```swift
/// for t in try await client.history(store: "travel", after: lastToken) {
///     for c in t.changes where c.kind == .update { print(c.identifier, c.fields ?? []) }
/// }
/// ```
public struct HistoryTransaction: Sendable, Hashable, Codable {
    /// Its token: pass it as `after` to read what came later.
    ///
    /// ```swift
    /// let page = try await client.history(store: "travel", after: last.token)
    /// ```
    public var token: String
    /// When it committed (ISO 8601).
    ///
    /// ```swift
    /// print(transaction.timestamp)     // "2026-11-24T18:52:48.165Z"
    /// ```
    public var timestamp: String
    /// Who made it.
    ///
    /// ```swift
    /// let mine = transactions.filter { $0.author == "alice" }
    /// ```
    public var author: String
    /// The job it belongs to, if any.
    ///
    /// ```swift
    /// if let job = transaction.job { print(try await client.job(job).kind) }
    /// ```
    public var job: String?
    /// Whether more of its changes follow after ``token``, a place inside
    /// it: a page holds at most so many changes, so a large transaction
    /// comes in parts; `nil` (or `false`) for its last or only part.
    ///
    /// ```swift
    /// if transaction.continues == true { print("more of", transaction.token, "on the next page") }
    /// ```
    public var continues: Bool?
    /// What it changed.
    ///
    /// ```swift
    /// let inserts = transaction.changes.filter { $0.kind == .insert }.count
    /// ```
    public var changes: [HistoryChange]

    package init(
        token: String, timestamp: String, author: String, job: String?, continues: Bool?, changes: [HistoryChange]
    ) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.job = job
        self.continues = continues
        self.changes = changes
    }

    enum CodingKeys: String, CodingKey {
        case token, timestamp, author, job, continues, changes
    }

    /// Writes the transaction as the daemon does: `job` is `null` for a
    /// save outside a job; `continues` only when more of it follows.
    ///
    /// ```swift
    /// let line = try JSONEncoder().encode(t)
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(token, forKey: .token)
        try c.encode(timestamp, forKey: .timestamp)
        try c.encode(author, forKey: .author)
        try c.encode(job, forKey: .job)
        if continues == true { try c.encode(true, forKey: .continues) }
        try c.encode(changes, forKey: .changes)
    }
}

/// One record's change in a ``HistoryTransaction``.
///
/// ```swift
/// if change.kind == .update, let old = change.old, let new = change.new { print(old, "→", new) }
/// ```
public struct HistoryChange: Sendable, Hashable, Codable {
    /// What happened to the record.
    ///
    /// ```swift
    /// if change.kind == .delete { cache[change.identifier] = nil }
    /// ```
    public enum Kind: String, Sendable, Hashable, Codable {
        /// It was inserted.
        ///
        /// ```swift
        /// let added = t.changes.filter { $0.kind == .insert }
        /// ```
        case insert
        /// Some of its fields changed.
        ///
        /// ```swift
        /// let edited = t.changes.filter { $0.kind == .update }
        /// ```
        case update
        /// It was deleted.
        ///
        /// ```swift
        /// let removed = t.changes.filter { $0.kind == .delete }.map(\.identifier)
        /// ```
        case delete
    }

    /// The entity.
    ///
    /// ```swift
    /// if change.entity == "Trip" { reindex(change.identifier) }
    /// ```
    public var entity: String
    /// The record's identifier (an array for a compound one).
    ///
    /// ```swift
    /// let id = change.identifier.string ?? change.identifier.text
    /// ```
    public var identifier: JSONValue
    /// What happened.
    ///
    /// ```swift
    /// switch change.kind { case .insert, .update: upsert(change); case .delete: remove(change) }
    /// ```
    public var kind: Kind
    /// An update's changed fields.
    ///
    /// ```swift
    /// if change.fields?.contains("budget") == true { recomputeTotals() }
    /// ```
    public var fields: [String]?
    /// A delete's preserved fields (`preserve_on_delete`).
    ///
    /// ```swift
    /// print(change.tombstone?["name"]?.string ?? "")     // preserve_on_delete = ["name"]
    /// ```
    public var tombstone: JSONValue?
    /// With `history = "values"`: the values before (update, delete).
    ///
    /// ```swift
    /// let before = change.old?["budget"]?.double
    /// ```
    public var old: JSONValue?
    /// With `history = "values"`: the values after (insert, update).
    ///
    /// ```swift
    /// let after = change.new?["budget"]?.double
    /// ```
    public var new: JSONValue?

    package init(
        entity: String, identifier: JSONValue, kind: Kind, fields: [String]? = nil, tombstone: JSONValue? = nil,
        old: JSONValue? = nil, new: JSONValue? = nil
    ) {
        self.entity = entity
        self.identifier = identifier
        self.kind = kind
        self.fields = fields
        self.tombstone = tombstone
        self.old = old
        self.new = new
    }
}

/// A durable cursor over a store's history (DESIGN §11): one per
/// downstream system, which reads after its token and acknowledges.
///
/// ```swift
/// let indexer = try await client.createConsumer("indexer", store: "travel", from: .beginning)
/// print(indexer.token, indexer.lagTransactions)
/// ```
public struct Consumer: Sendable, Hashable, Codable {
    /// Its name.
    ///
    /// ```swift
    /// let names = try await client.consumers(store: "travel").map(\.name)
    /// ```
    public var name: String
    /// The last transaction it acknowledged.
    ///
    /// ```swift
    /// let next = try await client.history(store: "travel", after: consumer.token)
    /// ```
    public var token: String
    /// Transactions committed after its token.
    ///
    /// ```swift
    /// if consumer.lagTransactions > 10_000 { alert("\(consumer.name) is behind") }
    /// ```
    public var lagTransactions: Int
    /// Seconds since the oldest of those committed.
    ///
    /// ```swift
    /// if consumer.lagSeconds > 3600 { alert("an hour behind") }
    /// ```
    public var lagSeconds: Double
    /// When it last acknowledged.
    ///
    /// ```swift
    /// print(consumer.acknowledgedAt ?? "never")
    /// ```
    public var acknowledgedAt: String?
    /// `active`, or `lost` once the history it needs was pruned.
    ///
    /// ```swift
    /// if consumer.state == "lost" { try await client.resetConsumer(consumer.name, store: "travel", from: .now) }
    /// ```
    public var state: String

    enum CodingKeys: String, CodingKey {
        case name, token, lagTransactions = "lag_transactions", lagSeconds = "lag_seconds"
        case acknowledgedAt = "acknowledged_at", state
    }

    package init(
        name: String, token: String, lagTransactions: Int, lagSeconds: Double, acknowledgedAt: String?, state: String
    ) {
        self.name = name
        self.token = token
        self.lagTransactions = lagTransactions
        self.lagSeconds = lagSeconds
        self.acknowledgedAt = acknowledgedAt
        self.state = state
    }

    /// Where a new or reset consumer starts.
    ///
    /// ```swift
    /// try await client.createConsumer("audit", store: "travel", from: .beginning)
    /// ```
    public enum Start: String, Sendable, Hashable {
        /// At the oldest transaction kept: it reads the whole history.
        ///
        /// ```swift
        /// try await client.resetConsumer("indexer", store: "travel", from: .beginning)     // rebuild the index
        /// ```
        case beginning
        /// After the latest: it reads what commits from now on.
        ///
        /// ```swift
        /// try await client.createConsumer("alerts", store: "travel", from: .now)
        /// ```
        case now
    }
}

/// `GET /v1/stores/S/history`: a page of transactions, oldest first.
///
/// ```swift
/// let page = try JSONDecoder().decode(TransactionPage.self, from: body)
/// ```
public struct TransactionPage: Sendable, Hashable, Codable {
    /// The transactions.
    ///
    /// ```swift
    /// print(page.transactions.last?.token ?? "none")
    /// ```
    public var transactions: [HistoryTransaction]

    package init(transactions: [HistoryTransaction]) { self.transactions = transactions }
}

/// `DELETE /v1/stores/S/history`: what a prune deleted, and what held it back.
///
/// ```swift
/// let pruned = try await client.pruneHistory(store: "travel", olderThan: "30d")
/// print(pruned.pruned, pruned.heldBackBy?.consumer ?? "")
/// ```
public struct PruneAnswer: Sendable, Hashable, Codable {
    /// Transactions deleted.
    ///
    /// ```swift
    /// print(pruned.pruned, "transactions deleted")
    /// ```
    public var pruned: Int
    /// The active consumer that stopped the prune, if one did.
    ///
    /// ```swift
    /// if let held = pruned.heldBackBy { print("held back by", held.consumer, "at", held.token) }
    /// ```
    public var heldBackBy: Job.HeldBack?
    /// Consumers `history_max_retention` marked lost in this prune.
    ///
    /// ```swift
    /// for name in pruned.lost ?? [] { print(name, "is lost") }
    /// ```
    public var lost: [String]?

    package init(pruned: Int, heldBackBy: Job.HeldBack?, lost: [String]?) {
        self.pruned = pruned
        self.heldBackBy = heldBackBy
        self.lost = lost
    }

    enum CodingKeys: String, CodingKey {
        case pruned, heldBackBy = "held_back_by", lost
    }
}

/// `GET /v1/stores/S/consumers`: a store's consumers.
///
/// ```swift
/// let list = try JSONDecoder().decode(ConsumerList.self, from: body)
/// ```
public struct ConsumerList: Sendable, Hashable, Codable {
    /// The consumers, by name.
    ///
    /// ```swift
    /// for c in list.consumers { print(c.name, c.lagTransactions) }
    /// ```
    public var consumers: [Consumer]

    /// A list of `consumers`, as the daemon answers it.
    ///
    /// ```swift
    /// let list = ConsumerList(consumers: try await client.consumers(store: "travel"))
    /// ```
    public init(consumers: [Consumer]) { self.consumers = consumers }
}

/// The body of `POST /v1/stores/S/consumers` and of a consumer's `reset`:
/// its name (when created), and where it starts: `now` (the default),
/// `beginning`, or a token.
///
/// ```swift
/// let body = ConsumerBody(name: "indexer", from: "beginning")
/// ```
public struct ConsumerBody: Sendable, Hashable, Codable {
    /// The consumer's name (creating one).
    ///
    /// ```swift
    /// print(body.name ?? "")
    /// ```
    public var name: String?
    /// Where it starts: `now`, `beginning` or a token.
    ///
    /// ```swift
    /// print(body.from ?? "now")
    /// ```
    public var from: String?

    /// A request to create consumer `name`, or to reset one (no name).
    ///
    /// ```swift
    /// let reset = ConsumerBody(from: "41")
    /// ```
    public init(name: String? = nil, from: String? = nil) {
        self.name = name
        self.from = from
    }
}

/// The body of `POST /v1/stores/S/consumers/NAME/ack`.
///
/// ```swift
/// let body = AckBody(token: "41")
/// ```
public struct AckBody: Sendable, Hashable, Codable {
    /// The last token the consumer handled.
    ///
    /// ```swift
    /// print(body.token)
    /// ```
    public var token: String

    /// Acknowledges `token`.
    ///
    /// ```swift
    /// let ack = AckBody(token: t.token)
    /// ```
    public init(token: String) { self.token = token }
}

/// `DELETE /v1/stores/S/consumers/NAME`: the consumer dropped.
///
/// ```swift
/// let answer = try JSONDecoder().decode(DroppedConsumer.self, from: body)
/// ```
public struct DroppedConsumer: Sendable, Hashable, Codable {
    /// Its name.
    ///
    /// ```swift
    /// print(answer.dropped)
    /// ```
    public var dropped: String

    /// The answer to dropping consumer `dropped`.
    ///
    /// ```swift
    /// let answer = DroppedConsumer(dropped: "indexer")
    /// ```
    public init(dropped: String) { self.dropped = dropped }
}
