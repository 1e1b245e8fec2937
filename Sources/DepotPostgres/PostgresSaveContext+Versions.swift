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
}

extension PostgresSaveContext {
    public func historyToken(issue: Bool) async throws -> Int64? {
        issue ? try await historyTransaction() : transactionID
    }
}
