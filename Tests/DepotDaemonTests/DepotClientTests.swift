import DepotClient
import Foundation
import Testing

/// The Swift client library (issue 14, DESIGN §13) against a real depotd on
/// a temporary socket: every call, and the errors, typed.
@Suite("DepotClient against a real depotd", .serialized)
struct DepotClientTests {
    /// A daemon holding 30 trips (tripsCSV: City 0…8, budgets i.5).
    static func daemon() throws -> DaemonProcess {
        let d = try DaemonProcess(config: DaemonProcess.config())
        _ = try ChangeFeedTests.importTrips(d, tripsCSV(30), name: "trips.csv")
        return d
    }

    struct Trip: Decodable, Equatable {
        var id: String
        var name: String
        var destination: String?
        var budget: Double
        var isFavorite: Bool
    }

    @Test("stores and entities, with their fields and counts")
    func stores() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let stores = try await client.stores()
        #expect(stores.map(\.name) == ["travel"])
        let travel = try await client.store("travel")
        #expect(travel == stores[0])
        let trip = try #require(travel.entity("Trip"))
        #expect(trip.count == 30 && trip.identifier == ["id"] && trip.indexes == [["destination"]])
        #expect(trip.fields.first { $0.name == "destination" }?.type == "string?")
        #expect(travel.token != nil)
        #expect(travel.entity("Nope") == nil)
    }

    @Test("fetch as records and as a Decodable type, count, identifiers, with predicates, sort, pages and fields")
    func fetching() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let request = FetchRequest(store: "travel", entity: "Trip", where: "destination == $city AND budget > $min",
                                   arguments: ["city": "City 1", "min": 5], sort: ["-budget"])
        let records = try await client.fetch(request)
        // City 1: t1, t10, t19, t28; budget > 5 leaves t10, t19, t28.
        #expect(records.map { $0["id"]?.string } == ["t28", "t19", "t10"])
        #expect(records[0]["budget"]?.double == 28.5 && records[0]["isFavorite"]?.bool == true)
        let trips = try await client.fetch(request, as: Trip.self)
        #expect(trips.first == Trip(id: "t28", name: "Trip 28", destination: "City 1", budget: 28.5, isFavorite: true))
        #expect(try records[1].decode(as: Trip.self) == trips[1])
        #expect(try await client.count(request) == 3)
        #expect(try await client.identifiers(request) == ["t28", "t19", "t10"])
        var page = FetchRequest(store: "travel", entity: "Trip", sort: ["id"], limit: 2, offset: 1, fields: ["id", "budget"])
        let two = try await client.fetch(page)
        #expect(two.map(\.fields) == [["id": "t1", "budget": 1.5], ["id": "t10", "budget": 10.5]])
        page.limit = nil
        #expect(try await client.count(page) == 29)
        #expect(try await client.count(FetchRequest(store: "travel", entity: "Trip")) == 30)
    }

    @Test("aggregates by group, and duplicates")
    func aggregatesAndDuplicates() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        let rows = try await client.aggregate(store: "travel", entity: "Trip", field: "budget", functions: [.count, .max],
                                              groupBy: ["destination"], where: "budget < $b", arguments: ["b": 20])
        #expect(rows.count == 9)
        #expect(rows[0].group == ["destination": "City 0"])
        #expect(rows[0][.count] == 3 && rows[0][.max] == 18.5 && rows[0][.avg] == nil)
        let all = try await client.aggregate(store: "travel", entity: "Trip")
        #expect(all.count == 1 && all[0].group.isEmpty && all[0][.count] == 30)
        let groups = try await client.duplicates(store: "travel", entity: "Trip", by: ["destination"], limit: 2)
        #expect(groups.map(\.values) == [["City 0"], ["City 1"]])
        #expect(Set(groups[0].identifiers) == ["t0", "t9", "t18", "t27"])
        #expect(try await client.duplicates(store: "travel", entity: "Trip", by: ["name"]).isEmpty)
    }

    @Test("every error is a DepotClientError with the daemon's code, status and message")
    func errors() async throws {
        let d = try Self.daemon()
        defer { d.stop(); try? FileManager.default.removeItem(at: d.folder) }
        let client = DepotClient(socketPath: d.socket)
        func failure(_ body: () async throws -> Void) async -> DepotClientError? {
            do {
                try await body()
                return nil
            } catch let error as DepotClientError {
                return error
            } catch {
                Issue.record("not a DepotClientError: \(error)")
                return nil
            }
        }
        let store = await failure { _ = try await client.store("tarvel") }
        #expect(store?.code == .unknownStore && store?.status == 404 && store?.message.contains("travel") == true)
        let entity = await failure { _ = try await client.count(FetchRequest(store: "travel", entity: "Trips")) }
        #expect(entity?.code == .unknownEntity && entity?.status == 404)
        let predicate = await failure {
            _ = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", where: "budget >"))
        }
        #expect(predicate?.code == .invalidPredicate && predicate?.status == 400 && predicate?.position == 9)
        let field = await failure {
            _ = try await client.fetch(FetchRequest(store: "travel", entity: "Trip", sort: ["cost"]))
        }
        #expect(field?.code == .unknownField)
        let type = await failure {
            _ = try await client.count(FetchRequest(store: "travel", entity: "Trip", where: "budget > 'high'"))
        }
        #expect(type?.code == .typeMismatch)
        let duplicates = await failure { _ = try await client.duplicates(store: "travel", entity: "Trip", by: []) }
        #expect(duplicates?.code == .invalidArgument)
        struct Wrong: Decodable { var id: Int }
        let decoding = await failure { _ = try await client.fetch(FetchRequest(store: "travel", entity: "Trip"), as: Wrong.self) }
        #expect(decoding?.code == .unexpectedAnswer && decoding?.status == nil)
        let nobody = await failure { _ = try await DepotClient(socketPath: d.folder.path + "/none.sock").stores() }
        #expect(nobody?.code == .unreachable && nobody?.message.contains("no daemon at") == true)
    }

    @Test("the socket comes from the argument, else DEPOT_SOCKET, else the default")
    func socketPath() {
        #expect(DepotClient(socketPath: "/tmp/x.sock").socketPath == "/tmp/x.sock")
        let environment = ProcessInfo.processInfo.environment["DEPOT_SOCKET"]
        #expect(DepotClient().socketPath == (environment.flatMap { $0.isEmpty ? nil : $0 } ?? "/run/depot/depot.sock"))
    }
}
