import Foundation

/// A fetched record: its fields by name, with embedded related records as
/// objects (a to-one) and arrays (a to-many).
///
/// ```swift
/// let trip = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", limit: 1))[0]
/// let name = trip["name"]?.string
/// let city = order.value(at: "customer.city")?.string   // through an embedded to-one
/// ```
public struct Record: Sendable, Hashable {
    /// The fields, by name.
    ///
    /// ```swift
    /// for (name, value) in record.fields.sorted(by: { $0.key < $1.key }) { print(name, value.text) }
    /// ```
    public var fields: [String: JSONValue]

    /// A record of these fields.
    ///
    /// ```swift
    /// let r = Record(["id": "t1", "budget": 900.0])
    /// ```
    public init(_ fields: [String: JSONValue]) { self.fields = fields }

    /// A field's value, `nil` when the record has no such field (a field
    /// without a value is ``JSONValue/null``).
    ///
    /// ```swift
    /// let budget = record["budget"]?.double ?? 0
    /// ```
    public subscript(field: String) -> JSONValue? { fields[field] }

    /// The value at a key path through embedded records: `customer.name`;
    /// through a to-many (`lines.sku`), the array of each one's value.
    ///
    /// ```swift
    /// let skus = order.value(at: "lines.sku")?.array ?? []
    /// ```
    public func value(at path: String) -> JSONValue? { JSONValue.object(fields).value(at: path) }

    /// The record decoded as `T`, as ``DepotClient/fetch(_:as:)`` decodes it.
    ///
    /// ```swift
    /// let trip = try record.decode(as: Trip.self)
    /// ```
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        let data = try JSONEncoder().encode(JSONValue.object(fields))
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw DepotClientError(.unexpectedAnswer, "a record does not decode as \(T.self): \(error)")
        }
    }
}

/// A statistic of ``DepotClient/aggregate(store:entity:field:functions:groupBy:where:arguments:)``.
///
/// ```swift
/// try await client.aggregate(store: "travel", entity: "Trip", field: "budget", functions: [.min, .max])
/// ```
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable {
    /// Non-null values (every record without a field).
    ///
    /// ```swift
    /// let rows = try await client.aggregate(store: "travel", entity: "Trip", functions: [.count], groupBy: ["destination"])
    /// ```
    case count
    /// Their sum.
    ///
    /// ```swift
    /// let total = try await client.aggregate(store: "travel", entity: "Trip", field: "budget", functions: [.sum])[0][.sum]
    /// ```
    case sum
    /// Their mean.
    ///
    /// ```swift
    /// let mean = try await client.aggregate(store: "travel", entity: "Trip", field: "budget", functions: [.avg])[0][.avg]
    /// ```
    case avg
    /// The smallest.
    ///
    /// ```swift
    /// let first = try await client.aggregate(store: "travel", entity: "Trip", field: "startDate", functions: [.min])[0][.min]
    /// ```
    case min
    /// The largest.
    ///
    /// ```swift
    /// let last = try await client.aggregate(store: "travel", entity: "Trip", field: "startDate", functions: [.max])[0][.max]
    /// ```
    case max
}

/// One row of an aggregate: the group's values and each statistic.
///
/// ```swift
/// row.group["destination"]?.string     // "Paris"
/// row[.avg]?.double                    // 1234.5
/// ```
public struct AggregateRow: Sendable, Hashable {
    /// The values of the `groupBy` fields; empty without grouping.
    ///
    /// ```swift
    /// let city = row.group["destination"]?.string ?? "(none)"
    /// ```
    public var group: [String: JSONValue]
    /// The statistics asked for, by function.
    ///
    /// ```swift
    /// let sum = row.values[.sum]?.double ?? 0
    /// ```
    public var values: [AggregateFunction: JSONValue]

    init(_ row: [String: JSONValue]) {
        group = row["group"]?.object ?? [:]
        var values: [AggregateFunction: JSONValue] = [:]
        for f in AggregateFunction.allCases { if let v = row[f.rawValue] { values[f] = v } }
        self.values = values
    }

    /// One statistic: `row[.sum]`.
    ///
    /// ```swift
    /// let mean = row[.avg]?.double
    /// ```
    public subscript(function: AggregateFunction) -> JSONValue? { values[function] }
}
