import DepotVersion
// The wire's types are the client's: `import DepotClient` gives `JSONValue`.
@_exported public import DepotWire
import Foundation
import NIOHTTP1

/// A connection to `depotd` over its control socket (DESIGN §13): stores and
/// entities, fetches and their counts, identifiers, aggregates and
/// duplicates, with records as ``Record``s or decoded into your own types.
///
/// A value is cheap: each call opens its own connection to the socket and
/// closes it, so one client is shared freely between tasks.
///
/// ```swift
/// let client = DepotClient()                       // $DEPOT_SOCKET, else /run/depot/depot.sock
/// let paris = FetchRequest(store: "travel", entity: "Trip",
///                          where: "destination == $city", arguments: ["city": "Paris"],
///                          sort: ["-budget"], limit: 10)
/// for trip in try await client.fetch(paris) {
///     print(trip["name"]?.string ?? "", trip["budget"]?.double ?? 0)
/// }
/// ```
public struct DepotClient: Sendable {
    /// The path of the daemon's control socket.
    ///
    /// ```swift
    /// print(DepotClient().socketPath)      // "/run/depot/depot.sock" unless DEPOT_SOCKET says otherwise
    /// ```
    public let socketPath: String
    /// The `User-Agent` of each request, which the daemon logs.
    ///
    /// ```swift
    /// var client = DepotClient()
    /// client.userAgent = "billing-sync/1.2"
    /// ```
    public var userAgent = "DepotClient/" + DepotVersion.current

    /// The default socket: `/run/depot/depot.sock`.
    ///
    /// ```swift
    /// let local = FileManager.default.fileExists(atPath: DepotClient.defaultSocketPath)
    /// ```
    public static let defaultSocketPath = "/run/depot/depot.sock"

    /// A client of the daemon at `socketPath`; without it, at
    /// `$DEPOT_SOCKET`, else at ``defaultSocketPath``. Nothing connects yet.
    ///
    /// ```swift
    /// let client = DepotClient(socketPath: "/tmp/depot-dev/depot.sock")
    /// ```
    public init(socketPath: String? = nil) {
        self.socketPath =
            socketPath
            ?? ProcessInfo.processInfo.environment["DEPOT_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.defaultSocketPath
    }

    // MARK: Stores

    /// Every store the daemon serves, with its entities and their counts.
    ///
    /// ```swift
    /// for store in try await client.stores() { print(store.name, store.entities.map(\.name)) }
    /// ```
    public func stores() async throws -> [StoreInfo] {
        try await json(StoreList.self, .GET, "/v1/stores").stores
    }

    /// One store: its entities, their fields, counts and relationships.
    ///
    /// ```swift
    /// let travel = try await client.store("travel")
    /// let trips = travel.entity("Trip")?.count ?? 0
    /// ```
    ///
    /// - Throws: ``DepotClientError`` with ``DepotClientError/Code/unknownStore``.
    public func store(_ name: String) async throws -> StoreInfo {
        try await json(StoreInfo.self, .GET, "/v1/stores/\(Self.escaped(name))")
    }

    // MARK: Fetching

    /// The records a request selects, in its order.
    ///
    /// ```swift
    /// let trips = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", limit: 20))
    /// ```
    ///
    /// - Throws: ``DepotClientError``: an unknown store, entity or field, a
    ///   predicate that does not parse (with its position), a type mismatch.
    public func fetch(_ request: FetchRequest) async throws -> [Record] {
        try await json(RecordsAnswer.self, .POST, request.path("fetch"), body: request.body())
            .records.map(Record.init)
    }

    /// The records a request selects, decoded as `T` (your `Decodable`
    /// type: its properties named as the entity's fields; dates arrive as
    /// ISO 8601 text).
    ///
    /// ```swift
    /// struct Trip: Decodable { var id: String; var name: String; var budget: Double }
    /// let trips = try await client.fetch(FetchRequest(store: "travel", entity: "Trip"), as: Trip.self)
    /// ```
    ///
    /// - Throws: as ``fetch(_:)``, and ``DepotClientError/Code/unexpectedAnswer``
    ///   naming the record and the key when a record does not decode as `T`.
    public func fetch<T: Decodable>(_ request: FetchRequest, as type: T.Type) async throws -> [T] {
        return try await json(TypedRecords<T>.self, .POST, request.path("fetch"), body: request.body())
            .records
    }

    /// How many records a request selects (its limit and offset apply).
    ///
    /// ```swift
    /// let favourites = try await client.count(FetchRequest(store: "travel", entity: "Trip", where: "isFavorite == true"))
    /// ```
    public func count(_ request: FetchRequest) async throws -> Int {
        try await json(CountAnswer.self, .POST, request.path("fetch"), body: request.body(result: "count"))
            .count
    }

    /// The identifiers of the records a request selects, in its order: a
    /// string or number each, or an array of them for a compound identifier.
    ///
    /// ```swift
    /// let ids = try await client.identifiers(FetchRequest(store: "travel", entity: "Trip", sort: ["id"]))
    /// ```
    public func identifiers(_ request: FetchRequest) async throws -> [JSONValue] {
        try await json(
            IdentifiersAnswer.self, .POST, request.path("fetch"), body: request.body(result: "identifiers")
        ).identifiers
    }

    /// Statistics of a field — count, sum, avg, min, max, or those named —
    /// over the records `where` selects, by groups of `groupBy`'s values.
    ///
    /// ```swift
    /// let rows = try await client.aggregate(store: "travel", entity: "Trip", field: "budget",
    ///                                       functions: [.count, .avg], groupBy: ["destination"])
    /// for row in rows { print(row.group["destination"]?.string ?? "-", row[.avg]?.double ?? 0) }
    /// ```
    public func aggregate(
        store: String, entity: String, field: String? = nil, functions: [AggregateFunction]? = nil,
        groupBy: [String] = [], where predicate: String? = nil,
        arguments: [String: JSONValue] = [:]
    ) async throws -> [AggregateRow] {
        var body = AggregateBody()
        body.field = field
        body.functions = functions?.map(\.rawValue)
        if !groupBy.isEmpty { body.groupBy = groupBy }
        body.where = predicate
        if !arguments.isEmpty { body.arguments = arguments }
        return try await json(AggregateAnswer.self, .POST, Self.entityPath(store, entity, "aggregate"), body: body)
            .rows.map(AggregateRow.init)
    }

    /// The groups of records that share the values of `fields` (records
    /// with null in any of them are never duplicates), ordered by those
    /// values, each group's identifiers in storage order.
    ///
    /// ```swift
    /// for group in try await client.duplicates(store: "travel", entity: "Trip", by: ["name", "startDate"]) {
    ///     print(group.values, group.identifiers.count)
    /// }
    /// ```
    public func duplicates(
        store: String, entity: String, by fields: [String], where predicate: String? = nil,
        arguments: [String: JSONValue] = [:], limit: Int? = nil
    ) async throws -> [DuplicateGroup] {
        var body = DuplicatesBody(by: fields)
        body.where = predicate
        if !arguments.isEmpty { body.arguments = arguments }
        body.limit = limit
        return try await json(DuplicatesAnswer.self, .POST, Self.entityPath(store, entity, "duplicates"), body: body)
            .groups
    }

    // MARK: Paths

    /// `/v1/stores/S/entities/E/ACTION`, names escaped.
    package static func entityPath(_ store: String, _ entity: String, _ action: String) -> String {
        "/v1/stores/\(escaped(store))/entities/\(escaped(entity))/\(action)"
    }

    /// A name as one path segment.
    package static func escaped(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? name
    }
}

/// `{"records": [...]}` decoded as `T`s.
/// A fetch's records, each decoded as the caller's type.
private struct TypedRecords<T: Decodable>: Decodable {
    var records: [T]
}
