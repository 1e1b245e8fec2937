import Foundation
import GRDB
import GRDBSQLite

/// The migration primitives of an SQLite store's save (``WriteContext``).
extension SaveContext {
    func writeConverted(_ rows: [ConvertedRow<Int64>], plan: MigrationPlan) throws {
        let converted =
            plan.changes.map { "\(SQL.quote($0.shadow)) = ?" }
            + ["\(SQL.quote(MigrationPlan.rejectColumn)) = NULL"]
        let table = plan.serving.table
        for row in rows {
            if let reject = row.reject {
                let sets =
                    plan.changes.map { "\(SQL.quote($0.shadow)) = NULL" }
                    + ["\(SQL.quote(MigrationPlan.rejectColumn)) = ?"]
                try run(
                    "UPDATE \(table) SET " + sets.joined(separator: ", ") + " WHERE rowid = ?",
                    [.string(reject), .int(row.key)])
            } else {
                try run(
                    "UPDATE \(table) SET " + converted.joined(separator: ", ") + " WHERE rowid = ?",
                    row.values + [.int(row.key)])
            }
        }
    }

    func switchMigration(_ plan: MigrationPlan, retiring suffix: String) throws -> [String] {
        if plan.keyChanged { return try rebuild(plan) }
        let table = plan.serving.table
        let changed = Set(plan.changes.map(\.to.name))
        // An index on a changed field would follow its old column.
        for index in plan.serving.indexes where index.contains(where: changed.contains) {
            try db.execute(sql: "DROP INDEX IF EXISTS \(SQL.quote(SchemaMigrator.indexName(plan.serving, index)))")
        }
        var retired: [String] = []
        for change in plan.changes {
            if change.from != nil {
                let name = "depot_retired_\(change.to.name)_\(suffix)"
                try db.execute(
                    sql: "ALTER TABLE \(table) RENAME COLUMN \(SQL.quote(change.to.name)) TO \(SQL.quote(name))")
                retired.append(name)
            }
            try db.execute(
                sql: "ALTER TABLE \(table) RENAME COLUMN \(SQL.quote(change.shadow)) TO \(SQL.quote(change.to.name))")
        }
        try SchemaMigrator.syncIndexes(db, plan.target)
        try SchemaMigrator.keep(db, plan.target)
        // The reason column stays for the next migration, emptied.
        return retired + [MigrationPlan.rejectColumn]
    }

    /// A new identifier: its uniqueness is the table's own constraint, so
    /// the table is made again, its records (and their rowids) copied with
    /// their converted values, the old one dropped.
    private func rebuild(_ plan: MigrationPlan) throws -> [String] {
        let target = plan.target
        let building = "depot_rebuild_\(target.name)"
        try db.execute(sql: "DROP TABLE IF EXISTS \(SQL.quote(building))")
        try SchemaMigrator.create(db, target, table: building)
        let shadows = Dictionary(plan.changes.map { ($0.to.name, $0.shadow) }, uniquingKeysWith: { a, _ in a })
        let columns = target.fields.map { SQL.quote($0.name) }.joined(separator: ", ")
        let values = target.fields.map { SQL.quote(shadows[$0.name] ?? $0.name) }.joined(separator: ", ")
        try db.execute(
            sql: "INSERT INTO \(SQL.quote(building)) (rowid, \(columns), depot_token) "
                + "SELECT rowid, \(values), depot_token FROM \(plan.serving.table)")
        try db.execute(sql: "DROP TABLE \(plan.serving.table)")
        try db.execute(sql: "ALTER TABLE \(SQL.quote(building)) RENAME TO \(target.table)")
        try SchemaMigrator.syncIndexes(db, target)
        try SchemaMigrator.keep(db, target)
        return []
    }
}
