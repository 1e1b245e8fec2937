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

extension SaveContext {

    /// The changes of the record of `identifier` in the transactions after
    /// `token` through `through`, with the history's bounds.
    func history(of entity: EntitySchema, identifier: [Value], after token: Int64, through: Int64) throws
        -> RecordHistory
    {
        var id = ""
        Identifier.appendJSON(identifier, to: &id)
        var changes: [HistoryChange] = []
        var layouts: [Int64: [String]] = [:]
        if through > token {
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: "SELECT kind, fields, tombstone, old, new, layout FROM depot_changes "
                        + "WHERE txn > ? AND txn <= ? AND entity = ? AND identifier = ? ORDER BY txn, id"),
                arguments: [token, through, entity.name, id])
            while let row = try rows.next() {
                changes.append(
                    try CompactValues.change(
                        db, entity: entity.name, identifier: id, kind: row[0], fields: row[1], tombstone: row[2],
                        old: row[3], new: row[4], layout: row[5], layouts: &layouts))
            }
        }
        return RecordHistory(
            changes: changes, lastIssued: try HistoryQuery.lastIssued(db),
            prunedThrough: try HistoryQuery.prunedThrough(db))
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
