import GRDB
import GRDBSQLite

/// A stored record with the token of its last change: what a save's
/// optimistic concurrency compares (DESIGN §16) and what one record's
/// `GET` answers, its token as the `ETag`.
public struct RecordVersion: Sendable, Hashable {
    /// Every field's value, in the entity's order.
    public var values: [Value]
    /// The token of the history transaction that last changed the record
    /// (for a record stored before tokens were kept, the last token issued
    /// then: no earlier than its last change).
    public var token: HistoryToken

    package init(values: [Value], token: HistoryToken) {
        self.values = values
        self.token = token
    }
}

/// What a store's history holds of one record after a token: what a save
/// that read the record at that token merges with.
public struct RecordHistory: Sendable {
    /// The record's changes after the token, oldest first, values as JSON objects.
    public var changes: [HistoryChange]
    /// The last token the store issued: a token past it was never issued.
    public var lastIssued: Int64
    /// The history was pruned through this token: changes at or before it are gone.
    public var prunedThrough: Int64

    package init(changes: [HistoryChange], lastIssued: Int64, prunedThrough: Int64) {
        self.changes = changes
        self.lastIssued = lastIssued
        self.prunedThrough = prunedThrough
    }
}

extension RecordVersion {
    /// `entity`'s record of `identifier`, every field and then its token.
    static func select(_ entity: EntitySchema, identifier: [Value]) -> SQLStatement {
        """
        SELECT \(fields: entity.fields), depot_token FROM \(table: entity) \
        WHERE \(SQLStatement.matching(entity.identifier, identifier))
        """
    }

    /// A row of ``select(_:identifier:)``.
    init(row: [Value], of entity: EntitySchema) {
        self.init(
            values: zip(entity.fields, row).map { $1.stored(as: $0.type) },
            token: HistoryToken(row[entity.fields.count].integer ?? 0))
    }
}

extension WriteContext {
    /// The changes of the record of `identifier` logged in the transactions
    /// after `token` through `through` (none asked when `through` is not
    /// after `token`), oldest first, with the history's bounds: what a save
    /// merges with (``MergePolicy``). A row of a run of new records
    /// (PostgreSQL's) counts when the run names the record.
    package func history(of entity: EntitySchema, identifier: [Value], after token: Int64, through: Int64)
        async throws -> RecordHistory
    {
        var text = ""
        Identifier.appendJSON(identifier, to: &text)
        let key = text
        var changes: [HistoryChange] = []
        if through > token {
            let rows = try await rows(
                "SELECT c.txn, c.entity, c.identifier, c.kind, c.fields, c.tombstone, c.old, c.new, c.layout, \(changeSpan: ()) FROM \(table: "depot_changes") c WHERE c.txn > \(bind: token) AND c.txn <= \(bind: through) AND c.entity = \(bind: entity.name) AND (c.identifier = \(bind: key) OR \(runNames: key)) ORDER BY c.txn, c.id"
            )
            var layouts = HistoryLayouts()
            for row in rows {
                changes += try await layouts.changes(ofRow: row, self, store: "").filter { $0.identifier == key }
            }
        }
        return RecordHistory(
            changes: changes, lastIssued: try await lastIssued(), prunedThrough: try await prunedThrough())
    }
}

extension StoreReading {
    /// The record of `identifier` of `entity`, with the token of its last
    /// change; nil when there is none.
    ///
    /// - Throws: ``DepotError/Code/unknownEntity``.
    package func record(_ entity: String, identifier: [Value]) async throws -> RecordVersion? {
        let entity = try schema.entity(entity)
        return try await rows(RecordVersion.select(entity, identifier: identifier)).first.map {
            RecordVersion(row: $0, of: entity)
        }
    }
}
