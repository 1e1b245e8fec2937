/// A batch of records of one entity to write in one save, row by row.
///
/// The batch names the fields it provides (`columns`); rows hold their values
/// in that order. Under ``ConflictPolicy/upsert`` a field the batch does not
/// provide keeps its stored value. Values are stored flat, so appending a row
/// allocates nothing once the batch has reserved its capacity.
///
/// For example:
///
/// ```swift
/// var batch = RecordBatch(entity: "Trip", columns: ["id", "name", "budget"])
/// batch.append(["t1", "Paris in spring", 1200.0])
/// let counts = try await store.save(author: "me") { try $0.write(batch, policy: .upsert) }
/// ```
public struct RecordBatch: Sendable {
    /// The entity the records belong to.
    public let entity: String
    /// The fields each row provides, in order.
    public let columns: [String]
    /// All values, row after row.
    public private(set) var values: [Value] = []

    /// Creates an empty batch.
    public init(entity: String, columns: [String], reservingCapacity rows: Int = 0) {
        self.entity = entity
        self.columns = columns
        values.reserveCapacity(rows * columns.count)
    }

    /// The number of rows.
    public var count: Int { columns.isEmpty ? 0 : values.count / columns.count }

    /// Whether the batch has no rows.
    public var isEmpty: Bool { values.isEmpty }

    /// Appends one row; it must hold one value per column.
    public mutating func append(_ row: some Collection<Value>) {
        precondition(row.count == columns.count, "a row must hold one value per column")
        values.append(contentsOf: row)
    }

    /// Removes every row, keeping the capacity.
    public mutating func removeAll() {
        values.removeAll(keepingCapacity: true)
    }

    /// The values of row `index`.
    public func row(_ index: Int) -> ArraySlice<Value> {
        values[index * columns.count..<(index + 1) * columns.count]
    }
}
