public import DepotEngine
import Foundation
import NIOCore
import PostgresNIO

/// The migration primitives of a PostgreSQL store's save (``WriteContext``).
extension PostgresSaveContext {
    /// One statement for the whole batch: the rows as a JSON array of
    /// text, cast to each column's type.
    public func writeConverted(_ rows: [ConvertedRow<[Value]>], plan: MigrationPlan) async throws {
        let entity = plan.serving
        var json = "["
        // Each value as PostgreSQL's text of it, cast back by the statement.
        func member(_ name: String, _ text: String?) {
            json += "\"\(name)\":"
            if let text { JSONText.appendQuoted(text, to: &json) } else { json += "null" }
        }
        for (n, row) in rows.enumerated() {
            json += n > 0 ? ",{" : "{"
            for (k, value) in row.key.enumerated() {
                member("k\(k)", PostgresSQL.text(of: value))
                json += ","
            }
            for (k, value) in row.values.enumerated() {
                member("c\(k)", PostgresSQL.text(of: value))
                json += ","
            }
            member("r", row.reject)
            json += "}"
        }
        json += "]"
        let keys = entity.identifierIndexes.map { entity.fields[$0] }
        let record =
            keys.indices.map { "k\($0) text" } + plan.changes.indices.map { "c\($0) text" } + ["r text"]
        let sets =
            plan.changes.enumerated().map { k, change in
                "\(PostgresSQL.quote(change.shadow)) = v.c\(k)::\(PostgresSQL.type(change.to.type))"
            } + [
                "\(PostgresSQL.quote(MigrationPlan.rejectColumn)) = v.r"
            ]
        let match = keys.enumerated().map { k, field in
            "t.\(PostgresSQL.quote(field.name)) = v.k\(k)::\(PostgresSQL.type(field.type))"
        }
        var binds = PostgresBindings()
        binds.append(json)
        try await PostgresSQL.execute(
            try connection,
            "UPDATE \(store.table(entity.name)) AS t SET " + sets.joined(separator: ", ")
                + " FROM json_to_recordset($1::json) AS v(" + record.joined(separator: ", ") + ") WHERE "
                + match.joined(separator: " AND "), binds, logger: store.logger)
    }

    public func switchMigration(_ plan: MigrationPlan, retiring suffix: String) async throws -> [String] {
        let connection = try connection
        let table = store.table(plan.target.name)
        func run(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws {
            try await PostgresSQL.execute(connection, sql, binds, logger: store.logger)
        }
        for change in plan.changes {
            let name = PostgresSQL.quote(change.to.name)
            // Its indexes go with it; the target's are made below. A
            // dropped column takes no time (PostgreSQL marks it dropped).
            if change.from != nil { try await run("ALTER TABLE \(table) DROP COLUMN \(name)") }
            try await run("ALTER TABLE \(table) RENAME COLUMN \(PostgresSQL.quote(change.shadow)) TO \(name)")
            if !change.to.isOptional { try await run("ALTER TABLE \(table) ALTER COLUMN \(name) SET NOT NULL") }
        }
        try await run(
            "ALTER TABLE \(table) DROP COLUMN IF EXISTS \(PostgresSQL.quote(MigrationPlan.legacyTokenColumn)), "
                + "DROP COLUMN \(PostgresSQL.quote(MigrationPlan.rejectColumn))")
        if plan.keyChanged {
            // The new identifier is the primary key (its index built here);
            // the old one's fields keep NOT NULL only if still required.
            var binds = PostgresBindings()
            binds.append(table)
            let key = PostgresSQL.scalar(
                try await PostgresSQL.textRows(
                    connection,
                    "SELECT conname::text FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'p'",
                    binds, logger: store.logger))
            try await run(
                "ALTER TABLE \(table) " + (key.map { "DROP CONSTRAINT \(PostgresSQL.quote($0)), " } ?? "")
                    + "ADD PRIMARY KEY (" + plan.target.identifier.map(PostgresSQL.quote).joined(separator: ", ") + ")")
            for name in plan.serving.identifier where !plan.target.identifier.contains(name) {
                if let field = try? plan.target.field(named: name), field.isOptional {
                    try await run("ALTER TABLE \(table) ALTER COLUMN \(PostgresSQL.quote(name)) DROP NOT NULL")
                }
            }
        }
        try await PostgresMigrator.syncIndexes(connection, store, plan.target)
        try await PostgresMigrator.layouts(connection, store: store, entities: [plan.target])
        try await PostgresMigrator.keep(connection, store: store, plan.target)
        return []
    }
}
