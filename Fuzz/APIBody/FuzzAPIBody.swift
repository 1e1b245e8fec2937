// Built for testing only: in a debug build (the suite replays the kept
// inputs through it) or by scripts/fuzz (-enable-testing -DFUZZING). A plain
// release build (`swift build -c release`, which builds every target) compiles
// it empty (DepotFuzz then says so), since @testable imports need modules compiled for testing:
// that is what made release builds of a fresh clone fail (issue #13).
#if DEBUG || FUZZING
@testable import DepotDaemon
import DepotEngine
import DepotWire
import Foundation
public import FuzzSupport

/// Any bytes as the JSON body of a fetch, an aggregate, a duplicates
/// request, a job or a save (the first byte chooses), read and checked as the
/// daemon's routes do: a clear refusal (a decoding error's message, an
/// engine or API error) or a request that runs. A trap, a stack overflow
/// (1 MB of nesting) or an error of another kind is a finding.
enum APIBodyTarget {
    static let store: Store = {
        let folder = Fuzz.temporaryFolder("api")
        let config = try! DaemonConfig.parse(
            """
            [[store]]
            name = "travel"
            path = "\(folder)/fuzz.sqlite"
              [[store.entity]]
              name = "Trip"
              identifier = "id"
              indexes = [["destination"]]
                [store.entity.fields]
                id = "string"
                name = "string"
                destination = "string?"
                startDate = "date"
                budget = "double"
                isFavorite = "bool"
                nights = "int?"
            """, file: "/fuzz/depot.toml")
        return try! Fuzz.blocking { try await Store.open(config.stores[0]) }
    }()

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: Data) -> T? {
        do {
            return try JSONDecoder().decode(T.self, from: bytes)
        } catch let error as DecodingError {
            if JSONBody.describe(error).isEmpty { Fuzz.fail("an empty message for \(error)") }
            return nil
        } catch let error as DepotError where error.code != .database {
            // A job's setting refused as it is read (JobSetting).
            if error.message.isEmpty { Fuzz.fail("an empty message for \(error)") }
            return nil
        } catch {
            Fuzz.fail("decoding threw \(error)")
        }
    }

    /// Errors a route may answer with: the API's own and the engine's.
    static func expected(_ body: () async throws -> Void) async {
        do { try await body() } catch is APIError {} catch is SaveRefusal {} catch let error as DepotError {
            if error.code == .database { Fuzz.fail("a database error: \(error.message)") }
        } catch {
            Fuzz.fail("an error of another kind: \(error)")
        }
    }

    static func check(_ kind: UInt8, _ bytes: Data) {
        let reader = store.reader
        switch kind % 6 {
        case 0:
            guard let body = decode(FetchBody.self, bytes) else { return }
            try? Fuzz.blocking {
                await expected {
                    var d = try body.descriptor(entity: "Trip")
                    try reader.check(d)
                    // Its sort, keyset cursor and identifiers too, a page at most.
                    d.limit = min(d.limit ?? 10, 10)
                    _ = try await reader.identifiers(d)
                }
            }
        case 1:
            guard let body = decode(AggregateBody.self, bytes) else { return }
            try? Fuzz.blocking {
                await expected {
                    let functions = try body.functions?.map { name in
                        guard let f = AggregateFunction(rawValue: name) else {
                            throw DepotError(.invalidArgument, name)
                        }
                        return f
                    }
                    _ = try await reader.aggregate(
                        AggregateRequest(
                            entity: "Trip", field: body.field, functions: functions,
                            groupBy: body.groupBy ?? [], where: body.where,
                            arguments: try JSONValue.scalars(body.arguments, key: "arguments")))
                }
            }
        case 2:
            guard let body = decode(DuplicatesBody.self, bytes) else { return }
            try? Fuzz.blocking {
                await expected {
                    _ = try await reader.duplicates(
                        entity: "Trip", by: body.by, where: body.where,
                        arguments: try JSONValue.scalars(body.arguments, key: "arguments"),
                        limit: body.limit.map { min($0, 10) })
                }
            }
        case 4:
            // A save: read as the route reads it (its merge policy, its
            // tokens), then applied (or refused) on the store, once for its
            // idempotency key.
            // The daemon reads it with JSONTree when it can: to the same
            // body as JSONDecoder, and never one JSONDecoder refuses.
            let tree = bytes.withUnsafeBytes(JSONTree.parse)
            let commit = try? JSONDecoder().decode(ProcessorCommitBody.self, from: bytes)
            if let quick = tree.flatMap(ProcessorCommitBody.init(json:)), quick != commit {
                Fuzz.fail("the quick path reads a commit body otherwise than JSONDecoder")
            }
            let quick = tree.flatMap(SaveBody.init(json:))
            guard let body = decode(SaveBody.self, bytes) else {
                if quick != nil { Fuzz.fail("the quick path reads a save body JSONDecoder refuses") }
                return
            }
            if let quick, quick != body { Fuzz.fail("the quick path reads a save body otherwise than JSONDecoder") }
            try? Fuzz.blocking {
                await expected {
                    let changeSet = try ControlRoutes.changeSet(body, reads: reader)
                    let key = body.idempotencyKey.map {
                        IdempotencyKey(key: $0, digest: String(bytes.count), retention: .seconds(60))
                    }
                    let reply = try await store.saveAll([
                        SaveRequest(changeSet, author: "fuzz", idempotency: key, answer: { _ in "{}" })
                    ])[0]
                    _ = try reply.get()
                }
            }
        case 5:
            // One record's path and If-Match: the identifier a segment names, read.
            let text = String(decoding: bytes, as: UTF8.self)
            let (segment, header) = text.split(separator: "\n", maxSplits: 1).map(String.init).pair
            try? Fuzz.blocking {
                await expected {
                    _ = try ControlRoutes.ifMatch(header)
                    let entity = try reader.entity("Trip")
                    _ = try await reader.record("Trip", identifier: try ControlRoutes.identifier(segment, of: entity))
                }
            }
        default:
            guard let body = decode(JobSubmission.self, bytes) else { return }
            let record = JobRecord(id: "jfuzz", spec: body.spec, store: body.store, author: "fuzz")
            do {
                try body.spec.check(against: reader)
                // What is persisted must read back as it was.
                let back = try JSONDecoder().decode(JobRecord.self, from: JSONEncoder().encode(record))
                if back != record { Fuzz.fail("a job record does not read back as written") }
            } catch let error as DepotError {
                if error.code == .database { Fuzz.fail("a database error: \(error.message)") }
            } catch {
                Fuzz.fail("an error of another kind: \(error)")
            }
        }
    }
}

extension Array where Element == String {
    /// The first two elements, the second nil when absent.
    fileprivate var pair: (String, String?) { (first ?? "", count > 1 ? self[1] : nil) }
}

func fuzzAPIBody(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    guard size > 0 else { return 0 }
    APIBodyTarget.check(data[0], Data(bytes: data + 1, count: size - 1))
    return 0
}

/// The target as `DepotFuzz FuzzAPIBody` runs it.
public enum FuzzAPIBodyEntry {

    /// Each body kind (the first byte), with deep nesting up to 1 MB.
    public static let seeds: [[UInt8]] = [
        [0]
            + Array(
                #"{"where": "budget > $b", "arguments": {"b": 1}, "sort": ["-budget"], "limit": 5, "fields": ["id"]}"#
                    .utf8),
        [0] + Array((#"{"where": ""# + Fuzz.repeated("(", 300) + "budget > 1" + Fuzz.repeated(")", 300) + #""}"#).utf8),
        [0] + Array(("{\"arguments\": " + Fuzz.repeated("[", 500_000) + Fuzz.repeated("]", 500_000) + "}").utf8),
        [0] + Array(#"{"limit": 1e300, "offset": -1, "nulls": "middle"}"#.utf8),
        [1]
            + Array(
                #"{"field": "budget", "functions": ["sum", "avg"], "group_by": ["destination"], "where": "budget > 1"}"#
                    .utf8),
        [2] + Array(#"{"by": ["name", "startDate"], "limit": 3}"#.utf8),
        [5] + Array("T1%2F2\nW/\"41\"".utf8),
        [4]
            + Array(
                #"{"merge": "store-trump", "idempotency_key": "k", "changes": [{"update": "Trip", "identifier": "t1", "set": {"budget": 1}, "if_token": "1"}]}"#
                    .utf8),
        [3] + Array(#"{"kind": "prune", "store": "travel", "older_than": "1e300s"}"#.utf8),
        [3]
            + Array(
                #"{"kind": "update", "store": "travel", "entity": "Trip", "where": "id == 't1'", "set": {"budget": 1e400}}"#
                    .utf8),
        [3]
            + Array(
                #"{"kind": "import", "store": "travel", "entity": "Trip", "path": "/x.csv", "on_conflict": "merge", "max_rejects": "1%"}"#
                    .utf8),
        [3] + Array(("{\"kind\": \"dedupe\", \"by\": " + Fuzz.repeated("[", 500_000) + "}").utf8),
        [3]
            + Array(
                #"{"kind": "backup", "store": "travel", "path": "/var/lib/depot/backups/x.sqlite", "verify": true}"#
                    .utf8),
        [4]
            + Array(
                (#"{"author": "f", "changes": [{"insert": "Trip", "record": {"id": "t1", "name": "x", "startDate": "2025-01-01", "#
                    + #""budget": 1, "isFavorite": false}}, {"update": "Trip", "identifier": "t1", "set": {"nights": 2}}, "#
                    + #"{"delete": "Trip", "identifier": "t9"}]}"#).utf8),
        [4] + Array(#"{"changes": [{"upsert": "Trip", "record": {"id": [1, {"a": 2}], "budget": "x"}}]}"#.utf8)
    ]
    public static let body: Fuzz.Body = fuzzAPIBody
}

#endif
