/// A stored record as a save's primitives name it (``WriteContext/RecordKey``),
/// read from the columns of ``SQLDialect/recordKey(_:)`` and bound back in
/// ``SQLStatement``'s `\(recordOf:key:)`.
package protocol StoredKey: Sendable {
    /// The key's values, in the order of its columns.
    var keyValues: [Value] { get }
    /// The key of a row whose first columns are the key's (each as
    /// ``Value/stored(as:)`` reads it), of a record of `entity`.
    init(row: ArraySlice<Value>, of entity: EntitySchema)
    /// How many columns the key takes in a row of `entity`.
    static func width(of entity: EntitySchema) -> Int
}

/// An SQLite store's rowid.
extension Int64: StoredKey {
    package var keyValues: [Value] { [.int(self)] }
    package init(row: ArraySlice<Value>, of entity: EntitySchema) { self = row.first?.integer ?? 0 }
    package static func width(of entity: EntitySchema) -> Int { 1 }
}

/// A PostgreSQL store's identifier.
extension Array: StoredKey where Element == Value {
    package var keyValues: [Value] { self }
    package init(row: ArraySlice<Value>, of entity: EntitySchema) {
        self = zip(entity.identifierIndexes, row).map { $1.stored(as: entity.fields[$0].type) }
    }
    package static func width(of entity: EntitySchema) -> Int { entity.identifier.count }
}

/// The record primitives of a save, written once over its SQL
/// (``SQLSession``) in the backend's dialect: a record found by its
/// identifier or by a reference, read with its token, set, nullified. Each
/// backend gives the columns that name a record (``SQLDialect/recordKey(_:)``)
/// and the token its changes take (``WriteContext/changeToken()``).
extension WriteContext {
    /// Whether `entity` has a record of `identifier`.
    package func exists(_ entity: EntitySchema, identifier: [Value]) async throws -> Bool {
        try await !rows(
            "SELECT 1 FROM \(table: entity) WHERE \(SQLStatement.matching(entity.identifier, identifier))"
        ).isEmpty
    }

    /// The stored record of `identifier` with the token of its last change
    /// (a save's optimistic concurrency); nil when there is none.
    package func version(_ entity: EntitySchema, identifier: [Value]) async throws -> RecordVersion? {
        try await rows(RecordVersion.select(entity, identifier: identifier)).first.map {
            RecordVersion(row: $0, of: entity)
        }
    }

    /// The stored record of `identifier`: its key, and its values with the
    /// token of its last change (what a save checks, then updates).
    package func stored(_ entity: EntitySchema, identifier: [Value]) async throws -> (
        key: RecordKey, version: RecordVersion
    )? {
        let width = RecordKey.width(of: entity)
        return try await rows(
            """
            SELECT \(recordKey: entity), \(fields: entity.fields), depot_token FROM \(table: entity) \
            WHERE \(SQLStatement.matching(entity.identifier, identifier))
            """
        ).first.map { row in
            (RecordKey(row: row[..<width], of: entity), RecordVersion(row: Array(row[width...]), of: entity))
        }
    }

    /// The keys of the records that refer to the record of `identifier`
    /// through `reference`, in the backend's order.
    package func referring(_ reference: IncomingReference, to identifier: [Value]) async throws -> [RecordKey] {
        let source = reference.source
        return try await rows(
            """
            SELECT \(recordKey: source) FROM \(table: source) \
            WHERE \(SQLStatement.matching(reference.columns, identifier)) \
            ORDER BY \(recordKeyOrder: source)
            """
        ).map { RecordKey(row: $0[...], of: source) }
    }

    /// How many records refer to the record of `identifier` through `reference`.
    package func countReferring(_ reference: IncomingReference, to identifier: [Value]) async throws -> Int {
        let source = reference.source
        return Int(
            try await scalar(
                """
                SELECT count(*) FROM \(table: source) \
                WHERE \(SQLStatement.matching(reference.columns, identifier))
                """)?.integer ?? 0)
    }

    /// Sets `assignments` (entity positions and values) on record `key` of `entity`.
    package func set(_ assignments: [(Int, Value)], on key: RecordKey, of entity: EntitySchema) async throws {
        var statement: SQLStatement = "UPDATE \(table: entity) SET "
        for (position, value) in assignments {
            let field = entity.fields[position]
            statement = statement + "\(sql: SQL.quote(field.name)) = \(field: field, bind: value), "
        }
        try await execute(
            statement
                + "depot_token = \(bind: try await changeToken()) WHERE \(recordOf: entity, key: key.keyValues)")
    }

    /// Sets `reference` to null in the records that refer to the record of
    /// `identifier` through it, giving their identifiers in the backend's order.
    package func nullify(_ reference: IncomingReference, referringTo identifier: [Value]) async throws -> [[Value]] {
        let source = reference.source
        let ids = source.identifierIndexes.map { source.fields[$0] }
        let found = try await rows(
            """
            SELECT \(fields: ids) FROM \(table: source) \
            WHERE \(SQLStatement.matching(reference.columns, identifier)) \
            ORDER BY \(recordKeyOrder: source)
            """
        ).map { row in zip(ids, row).map { $1.stored(as: $0.type) } }
        guard !found.isEmpty else { return [] }
        try await execute(
            """
            UPDATE \(table: source) SET \(sql: reference.columns.map { SQL.quote($0) + " = NULL" }.joined(separator: ", ")), \
            depot_token = \(bind: try await changeToken()) \
            WHERE \(SQLStatement.matching(reference.columns, identifier))
            """)
        return found
    }
}
