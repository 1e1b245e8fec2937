/// How a batch's columns map onto its entity, worked out once for a batch's
/// columns and policy, with the checks every backend's writer makes: each
/// column a field of the entity, given once, the identifier given.
/// ``RowWriter`` (SQLite) and the PostgreSQL backend's save both start from it.
package struct BatchPlan: Sendable {
    package let entity: EntitySchema
    package let columns: [String]
    package let policy: ConflictPolicy
    /// For each batch column, its field.
    package let columnFields: [Field]
    /// For each batch column, its field's position in the entity.
    package let columnPositions: [Int]
    /// The batch positions of the identifier's fields, in identifier order.
    package let identifierColumns: [Int]
    /// The batch positions of the fields that are not part of the identifier.
    package let valueColumns: [Int]
    /// Required fields the batch does not provide.
    package let missingRequired: [String]
    /// For each entity field, its batch position or nil.
    package let fieldToColumn: [Int?]
    /// The entity positions an update sets: the batch's value fields, or
    /// under `replace` every field but the identifier's.
    package let updatedFields: [Int]
    package let keepsValues: Bool

    package init(entity: EntitySchema, columns: [String], policy: ConflictPolicy) throws {
        self.entity = entity
        self.columns = columns
        self.policy = policy
        var fields: [Field] = []
        var seen: Set<String> = []
        for name in columns {
            fields.append(try entity.field(named: name))
            guard seen.insert(name).inserted else {
                throw DepotError(.invalidArgument, "field \(JSONText.quoted(name)) is given twice")
            }
        }
        columnFields = fields
        columnPositions = columns.map { entity.position(of: $0)! }
        var idColumns: [Int] = []
        for name in entity.identifier {
            guard let i = columns.firstIndex(of: name) else {
                throw DepotError(
                    .invalidArgument,
                    "records of \(JSONText.quoted(entity.name)) must give "
                        + "identifier field \(JSONText.quoted(name))")
            }
            idColumns.append(i)
        }
        identifierColumns = idColumns
        valueColumns = columns.indices.filter { !idColumns.contains($0) }
        missingRequired = entity.fields.filter { !$0.isOptional && !columns.contains($0.name) }.map(\.name)
        fieldToColumn = entity.fields.map { columns.firstIndex(of: $0.name) }
        let valuePositions = valueColumns.map { entity.position(of: columns[$0])! }
        updatedFields =
            policy == .replace
            ? entity.fields.indices.filter { !entity.identifierIndexes.contains($0) }
            : valuePositions
        keepsValues = entity.history == .values
    }

    /// The identifier's values of row `r`.
    package func identifier(of batch: RecordBatch, row r: Int) -> [Value] {
        let base = r * columns.count
        return identifierColumns.map { batch.values[base + $0] }
    }

    /// The identifier of row `r` as the history writes it: the value, or an
    /// array of the values for a compound identifier.
    package func identifierJSON(_ batch: RecordBatch, row r: Int) -> String {
        let base = r * columns.count
        var out = ""
        if identifierColumns.count == 1 {
            JSONText.append(batch.values[base + identifierColumns[0]], to: &out)
            return out
        }
        out.append("[")
        for (i, c) in identifierColumns.enumerated() {
            if i > 0 { out.append(",") }
            JSONText.append(batch.values[base + c], to: &out)
        }
        out.append("]")
        return out
    }

    /// The JSON object of the fields at entity `positions`, each `value(position)`,
    /// byte for byte what an SQLite store's history reads give
    /// (compact values turned back into objects: ``CompactValues``).
    package func object(_ positions: some Sequence<Int>, _ value: (Int) -> Value) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for f in positions {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONBytes.appendQuoted(entity.fields[f].name, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONBytes.append(value(f), rawJSON: entity.fields[f].type == .json, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
