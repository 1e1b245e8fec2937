import ChildProcessSupport
import DepotEngine
import DepotPostgres
import Foundation
import Testing

/// Live fetch with changes (DESIGN §11) through the daemon's store
/// contract on both backends: one script of writes, the changes the feed
/// reports after each, and a feed resumed after a token; all must equal
/// SQLite's, and the turns that matter are checked by hand.
@Suite("Feed contract: live fetch with changes on SQLite and PostgreSQL")
struct FeedContractTests {
    static func describe(_ c: ResultChanges) -> String {
        "+\(c.inserted.rows.map { $0.map(\.description).joined(separator: "/") }) "
            + "~\(c.updated.rows.map { $0.map(\.description).joined(separator: "/") }) "
            + "-\(c.deleted.map(\.json))"
    }

    static func script(_ backend: any Backend) async throws -> [String] {
        var batch = RecordBatch(entity: "Trip", columns: PredicateContract.tripColumns)
        for row in PredicateContract.sampleTrips { batch.append(row) }
        _ = try await backend.write(batch)
        let reads = backend.contract.reads
        let descriptor = FetchDescriptor(
            entity: "Trip", where: "budget >= $min", arguments: ["min": 1000],
            fields: ["name", "budget"])
        let feed = try reads.resultFeed(descriptor)
        let (token, records) = try await feed.start()
        var out = [
            "start \(token.map { "\($0)" } ?? "-"): \(records.rows.count) records, fields \(records.fields.map(\.name))"
        ]
        func write(
            _ rows: [[Value]], columns: [String] = ["id", "name", "destination", "startDate", "budget", "isFavorite"]
        )
            async throws
        {
            var batch = RecordBatch(entity: "Trip", columns: columns)
            for row in rows { batch.append(row) }
            _ = try await backend.write(batch)
            out.append(describe(try await feed.changes()))
        }
        try await write([["n1", "New", "Oslo", "2025-09-01", 3000.0, true]])  // enters
        try await write([["t1", "Paris again", "Paris", "2025-04-01", 1500.0, true]])  // changes, stays
        try await write([["t5", "Road trip", "Paris", "2025-07-14", 10.0, false]])  // leaves
        try await write([["t6", "ZURICH again", "zurich", "2026-01-05", 1000.0, false]])  // a field not fetched
        try await write([["t2", "Zürich business", "Zürich", "2025-02-10", 5000.0, false]])  // enters by update
        out.append(describe(try await feed.changes()))  // nothing new
        _ = try await backend.contract.delete(
            entity: "Trip", where: "id == 'n1'", arguments: [:], author: "t",
            job: nil, batchSize: nil, progress: nil)
        out.append(describe(try await feed.changes()))  // deleted
        // A feed resumed after the start's token: what changed since, as far as it can know.
        let resumed = try reads.resultFeed(descriptor)
        try await resumed.resume(after: token!)
        out.append("resumed " + describe(try await resumed.changes()))
        // Refusals.
        for d in [FetchDescriptor(entity: "Trip", limit: 2), FetchDescriptor(entity: "Trip", where: "nope == 1")] {
            do {
                _ = try reads.resultFeed(d)
                out.append("no error")
            } catch let error as DepotError {
                out.append("\(error.code): \(error.message)")
            }
        }
        do {
            try await resumed.resume(after: HistoryToken(999))
            out.append("no error")
        } catch let error as DepotError {
            out.append("\(error.code): \(error.message)")
        }
        return out
    }

    @Test("the same changes after each write, and after a resume, on each backend")
    func script() async throws {
        let answers = try await Backends.answers(entities: [TestEntities.trip(values: true)], Self.script)
        for (name, out) in answers {
            #expect(out[0] == "start 1: 3 records, fields [\"id\", \"name\", \"budget\"]", "\(name): \(out)")
            #expect(out[1] == #"+["\"n1\"/\"New\"/3000.0"] ~[] -[]"#, "\(name): \(out)")
            #expect(out[2] == #"+[] ~["\"t1\"/\"Paris again\"/1500.0"] -[]"#, "\(name): \(out)")
            #expect(out[3] == #"+[] ~[] -["\"t5\""]"#, "\(name): \(out)")
            #expect(out[4] == "+[] ~[] -[]", "\(name): \(out)")
            #expect(out[5] == #"+["\"t2\"/\"Zürich business\"/5000.0"] ~[] -[]"#, "\(name): \(out)")
            #expect(out[6] == "+[] ~[] -[]", "\(name): \(out)")
            #expect(out[7] == #"+[] ~[] -["\"n1\""]"#, "\(name): \(out)")
            #expect(
                out[9].hasPrefix("invalid_argument: a live fetch with changes cannot take limit"), "\(name): \(out)")
            #expect(out[10].hasPrefix("unknown_field"), "\(name): \(out)")
            #expect(out[11].hasPrefix("invalid_token"), "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }
}
