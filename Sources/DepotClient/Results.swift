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

/// A store as the daemon describes it (`GET /v1/stores/S`).
///
/// ```swift
/// let store = try await client.store("travel")
/// print(store.entities.map { "\($0.name): \($0.count)" })
/// ```
public struct StoreInfo: Sendable, Hashable, Decodable {
    /// The store's name.
    ///
    /// ```swift
    /// let names = try await client.stores().map(\.name)
    /// ```
    public var name: String
    /// Its file on the daemon's machine.
    ///
    /// ```swift
    /// print(store.path)     // "/var/lib/depot/travel.sqlite"
    /// ```
    public var path: String
    /// The latest history token, `nil` before the first change.
    ///
    /// ```swift
    /// let live = client.live(request, since: try await client.store("travel").token ?? "0")
    /// ```
    public var token: String?
    /// Its entities, in declaration order.
    ///
    /// ```swift
    /// for e in store.entities { print(e.name, e.count) }
    /// ```
    public var entities: [EntityInfo]

    /// The entity of that name, if the store has one: `store.entity("Trip")?.count`.
    ///
    /// ```swift
    /// let trips = store.entity("Trip")?.count ?? 0
    /// ```
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
    ///
    /// ```swift
    /// let optional = entity.fields.filter { $0.type.hasSuffix("?") }.map(\.name)
    /// ```
    public struct Field: Sendable, Hashable, Decodable {
        /// The field's name.
        ///
        /// ```swift
        /// let names = entity.fields.map(\.name)
        /// ```
        public var name: String
        /// Its type as declared: `string`, `int`, `double`, `bool`, `date`, `json`, with `?` when optional.
        ///
        /// ```swift
        /// let dates = entity.fields.filter { $0.type.hasPrefix("date") }
        /// ```
        public var type: String
    }

    /// A relationship (DESIGN §12).
    ///
    /// ```swift
    /// for r in entity.relationships { print(r.name, r.kind, r.to) }
    /// ```
    public struct Relationship: Sendable, Hashable, Decodable {
        /// The relationship's name, as `prefetch` and key paths take it.
        ///
        /// ```swift
        /// request.prefetch = entity.relationships.map(\.name)
        /// ```
        public var name: String
        /// The entity it points at.
        ///
        /// ```swift
        /// let targets = Set(entity.relationships.map(\.to))
        /// ```
        public var to: String
        /// `to-one` or `to-many`.
        ///
        /// ```swift
        /// let toOnes = entity.relationships.filter { $0.kind == "to-one" }
        /// ```
        public var kind: String
        /// A to-one: whether it may be null.
        ///
        /// ```swift
        /// let mandatory = entity.relationships.filter { $0.required == true }
        /// ```
        public var required: Bool?
        /// A to-one: the fields that hold the target's identifier.
        ///
        /// ```swift
        /// print(relationship.columns ?? [])     // ["customer"]
        /// ```
        public var columns: [String]?
        /// A to-many: the to-one of the target that points back.
        ///
        /// ```swift
        /// print(relationship.inverse ?? "")     // "customer", on Order
        /// ```
        public var inverse: String?
        /// A to-many: what deleting this record does to its targets (`cascade`, `nullify`, `deny`).
        ///
        /// ```swift
        /// if relationship.delete == "deny" { print("delete the \(relationship.to) records first") }
        /// ```
        public var delete: String?
    }

    /// The entity's name.
    ///
    /// ```swift
    /// let request = FetchRequest(store: store.name, entity: entity.name)
    /// ```
    public var name: String
    /// Its records now.
    ///
    /// ```swift
    /// let total = store.entities.map(\.count).reduce(0, +)
    /// ```
    public var count: Int
    /// The identifier's fields.
    ///
    /// ```swift
    /// let key = entity.identifier.joined(separator: "+")
    /// ```
    public var identifier: [String]
    /// Its secondary indexes, each a list of fields.
    ///
    /// ```swift
    /// let indexed = Set(entity.indexes.compactMap(\.first))
    /// ```
    public var indexes: [[String]]
    /// Its fields, in declaration order.
    ///
    /// ```swift
    /// let columns = entity.fields.map(\.name)
    /// ```
    public var fields: [Field]
    /// Its relationships.
    ///
    /// ```swift
    /// let prefetchable = entity.relationships.map(\.name)
    /// ```
    public var relationships: [Relationship]
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

/// Records that share the values of some fields.
///
/// ```swift
/// group.values          // ["Week in Paris", "2025-04-01"]
/// group.identifiers     // ["T002", "T004"], first stored first
/// ```
public struct DuplicateGroup: Sendable, Hashable, Decodable {
    /// The shared values, one per field asked for.
    ///
    /// ```swift
    /// print(group.values.map(\.text).joined(separator: ", "))
    /// ```
    public var values: [JSONValue]
    /// The identifiers of the group's records, in storage order.
    ///
    /// ```swift
    /// let extra = group.identifiers.dropFirst()     // all but the first stored
    /// ```
    public var identifiers: [JSONValue]
}
