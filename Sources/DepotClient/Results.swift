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
    public var fields: [String: JSONValue]

    /// A record of these fields.
    ///
    /// ```swift
    /// let r = Record(["id": "t1", "budget": 900.0])
    /// ```
    public init(_ fields: [String: JSONValue]) { self.fields = fields }

    /// A field's value, `nil` when the record has no such field (a field
    /// without a value is ``JSONValue/null``).
    public subscript(field: String) -> JSONValue? { fields[field] }

    /// The value at a key path through embedded records: `customer.name`;
    /// through a to-many (`lines.sku`), the array of each one's value.
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

/// A store as the daemon describes it (`GET /v1/stores/S`).
///
/// ```swift
/// let store = try await client.store("travel")
/// print(store.entities.map { "\($0.name): \($0.count)" })
/// ```
public struct StoreInfo: Sendable, Hashable, Decodable {
    /// The store's name.
    public var name: String
    /// Its file on the daemon's machine.
    public var path: String
    /// The latest history token, `nil` before the first change.
    public var token: String?
    /// Its entities, in declaration order.
    public var entities: [EntityInfo]

    /// The entity of that name, if the store has one: `store.entity("Trip")?.count`.
    public func entity(_ name: String) -> EntityInfo? { entities.first { $0.name == name } }
}

/// An entity as the daemon describes it.
///
/// ```swift
/// let trip = try await client.store("travel").entity("Trip")!
/// print(trip.identifier, trip.fields.map(\.name), trip.count)
/// ```
public struct EntityInfo: Sendable, Hashable, Decodable {
    /// A field and its declared type (`string`, `double?`, …).
    public struct Field: Sendable, Hashable, Decodable {
        /// The field's name.
        public var name: String
        /// Its type as declared: `string`, `int`, `double`, `bool`, `date`, `json`, with `?` when optional.
        public var type: String
    }

    /// A relationship (DESIGN §12).
    public struct Relationship: Sendable, Hashable, Decodable {
        /// The relationship's name.
        public var name: String
        /// The entity it points at.
        public var to: String
        /// `to-one` or `to-many`.
        public var kind: String
        /// A to-one: whether it may be null.
        public var required: Bool?
        /// A to-one: the fields that hold the target's identifier.
        public var columns: [String]?
        /// A to-many: the to-one of the target that points back.
        public var inverse: String?
        /// A to-many: what deleting this record does to its targets (`cascade`, `nullify`, `deny`).
        public var delete: String?
    }

    /// The entity's name.
    public var name: String
    /// Its records now.
    public var count: Int
    /// The identifier's fields.
    public var identifier: [String]
    /// Its secondary indexes, each a list of fields.
    public var indexes: [[String]]
    /// Its fields, in declaration order.
    public var fields: [Field]
    /// Its relationships.
    public var relationships: [Relationship]
}

/// A statistic of ``DepotClient/aggregate(store:entity:field:functions:groupBy:where:arguments:)``.
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable {
    /// Non-null values (every record without a field).
    case count
    /// Their sum.
    case sum
    /// Their mean.
    case avg
    /// The smallest.
    case min
    /// The largest.
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
    public var group: [String: JSONValue]
    /// The statistics asked for, by function.
    public var values: [AggregateFunction: JSONValue]

    init(_ row: [String: JSONValue]) {
        group = row["group"]?.object ?? [:]
        var values: [AggregateFunction: JSONValue] = [:]
        for f in AggregateFunction.allCases { if let v = row[f.rawValue] { values[f] = v } }
        self.values = values
    }

    /// One statistic: `row[.sum]`.
    public subscript(function: AggregateFunction) -> JSONValue? { values[function] }
}

/// Records that share the values of some fields.
///
/// ```swift
/// group.values          // ["Week in Paris", "2025-04-01"]
/// group.identifiers     // ["T002", "T004"], first stored first
/// ```
public struct DuplicateGroup: Sendable, Hashable, Decodable {
    /// The shared values, one per field asked for.
    public var values: [JSONValue]
    /// The identifiers of the group's records, in storage order.
    public var identifiers: [JSONValue]
}
