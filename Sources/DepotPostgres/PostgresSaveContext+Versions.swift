public import DepotEngine
import Foundation
import NIOCore
import PostgresNIO

/// The tokens of records (DESIGN §16): each record keeps the token of its
/// last change in `depot_token`, and a save's optimistic concurrency
/// reads it, and the record's history since the token it was read at.
extension PostgresSaveContext {
    /// The token of this save's history transaction as SQL: the column's
    /// default, so that a COPY of new records (whose lines are made before
    /// the save has a transaction) takes it without a column of its own;
    /// ``historyTransaction()`` sets it, for this transaction only.
    static let tokenExpression = "nullif(current_setting('depot.token', true), '')::bigint"

    // A record's version is read once for every backend
    // (WriteContext+Primitives.swift). No row lock is needed: a save holds
    // the store's save lock from its start (PostgresStore.withSave), so a
    // save on another host reads the record only after this one committed,
    // and merges with it exactly once.

    public func history(of entity: EntitySchema, identifier: [Value], after token: Int64, through: Int64)
        async throws -> RecordHistory
    {
        var id = ""
        Identifier.appendJSON(identifier, to: &id)
        var changes: [HistoryChange] = []
        if through > token {
            var binds = PostgresBindings()
            binds.append(token)
            binds.append(through)
            binds.append(entity.name)
            binds.append(id)
            // A row that holds a run of new records (span) names them one a line.
            let rows = try await PostgresSQL.textRows(
                connection,
                "SELECT kind, fields, tombstone, old, new FROM \(store.table("depot_changes")) "
                    + "WHERE txn > $1 AND txn <= $2 AND entity = $3 AND (identifier = $4 OR (span IS NOT NULL "
                    + "AND strpos(E'\\n' || identifier || E'\\n', E'\\n' || $4 || E'\\n') > 0)) ORDER BY txn, id",
                binds, logger: store.logger)
            for row in rows {
                let kind = row[0].flatMap(ChangeKind.init(rawValue:)) ?? .update
                let fields = row[1].flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
                // An update's or a delete's values are objects; an insert's
                // (compact, in runs) are not needed: it changed every field.
                func object(_ text: String?) -> String? { text?.utf8.first == UInt8(ascii: "{") ? text : nil }
                changes.append(
                    HistoryChange(
                        entity: entity.name, identifier: id, kind: kind, fields: fields, tombstone: row[2],
                        old: kind == .insert ? nil : object(row[3]), new: kind == .insert ? nil : object(row[4])))
            }
        }
        return RecordHistory(
            changes: changes, lastIssued: try await store.lastIssued(connection),
            prunedThrough: try await store.prunedThrough(connection))
    }
}

extension PostgresSaveContext {
    public func transaction() async throws -> Int64? { transactionID }

    public func changeToken() async throws -> Int64 { try await historyTransaction() }
}
