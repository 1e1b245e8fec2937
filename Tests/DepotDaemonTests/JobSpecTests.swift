import DepotEngine
import DepotWire
import Foundation
import Testing

@testable import DepotDaemon

/// Typed job specifications (issue 10, item 1): read once where a job
/// enters, through one reader per setting, kept in the record and read
/// back as they were.
@Suite("Job specifications")
struct JobSpecTests {
    static func submission(_ json: String) throws -> JobSubmission {
        try JSONDecoder().decode(JobSubmission.self, from: Data(json.utf8))
    }

    static func refusal(_ json: String) -> String? {
        do {
            _ = try submission(json)
            return nil
        } catch let error as DepotError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test("each kind decodes into the engine's types")
    func decodes() throws {
        let imported = try Self.submission(
            #"{"kind":"import","store":"travel","entity":"Trip","path":"/data/t.ndjson","on_conflict":"skip","max_rejects":"1%"}"#
        )
        #expect(imported.store == "travel")
        #expect(
            imported.spec
                == .importFile(
                    entity: "Trip", path: "/data/t.ndjson",
                    options: ImportOptions(format: .ndjson, onConflict: .skip, maxRejects: .fraction(0.01))))
        // max_rejects as a JSON number too.
        let counted = try Self.submission(
            #"{"kind":"import","store":"s","entity":"Trip","path":"/x.csv","max_rejects":25}"#)
        guard case .importFile(_, _, let options) = counted.spec else { Issue.record("not an import"); return }
        #expect(options.maxRejects == .count(25))
        #expect(options.format == .csv)
        #expect(
            try Self.submission(
                #"{"kind":"update","store":"s","entity":"Trip","where":"budget > 1","set":{"isFavorite":true,"notes":null}}"#
            ).spec
                == .update(
                    entity: "Trip", where: "budget > 1", set: ["isFavorite": .bool(true), "notes": .null], compute: [:])
        )
        #expect(
            try Self.submission(
                #"{"kind":"update","store":"s","entity":"Trip","compute":{"budget":"budget * 1.1"}}"#
            ).spec == .update(entity: "Trip", where: nil, set: [:], compute: ["budget": "budget * 1.1"]))
        #expect(
            try Self.submission(#"{"kind":"dedupe","store":"s","entity":"Trip","by":["name"],"keep":"keep-last"}"#).spec
                == .dedupe(entity: "Trip", by: ["name"], keep: .keepLast, where: nil))
        #expect(
            try Self.submission(#"{"kind":"export","store":"s","entity":"Trip","format":"csv"}"#).spec
                == .export(entity: "Trip", where: nil, format: .csv, path: nil, prefetch: []))
        #expect(
            try Self.submission(#"{"kind":"export","store":"s","entity":"Order","prefetch":["customer","lines"]}"#).spec
                == .export(entity: "Order", where: nil, format: .ndjson, path: nil, prefetch: ["customer", "lines"]))
        #expect(
            try Self.submission(#"{"kind":"prune","store":"s","older_than":"7d"}"#).spec
                == .prune(.olderThan(.seconds(604_800))))
        #expect(try Self.submission(#"{"kind":"prune","store":"s","before":"42"}"#).spec.kind == .prune)
    }

    @Test("a bad setting is refused as it is read, naming the setting, what it takes and what came")
    func refusals() {
        let cases: [(String, String)] = [
            (
                #"{"kind":"import","store":"s","entity":"Trip","path":"/x.csv","on_conflict":"merge"}"#,
                #"on_conflict must be upsert, replace, skip or fail, not "merge""#
            ),
            (
                #"{"kind":"import","store":"s","entity":"Trip","path":"/x.csv","max_rejects":"lots"}"#,
                #"max_rejects must be a count (1000), a fraction below 1 (0.01) or a percentage ("1%"), not "lots""#
            ),
            (
                #"{"kind":"import","store":"s","entity":"Trip","path":"/x.csv","format":"xml"}"#,
                #"format must be auto, csv, tsv, ndjson or json, not "xml""#
            ),
            (#"{"kind":"import","store":"s","entity":"Trip"}"#, "an import names a path"),
            (#"{"kind":"import","store":"s","entity":"Trip","path":""}"#, "an import names a path"),
            (#"{"kind":"delete","store":"s"}"#, "a delete job names its entity"),
            (#"{"kind":"update","store":"s","entity":"Trip"}"#, "an update job needs set"),
            (
                #"{"kind":"dedupe","store":"s","entity":"Trip","by":["name"],"keep":"newest"}"#,
                #"keep must be keep-first or keep-last, not "newest""#
            ),
            (
                #"{"kind":"export","store":"s","entity":"Trip","format":"xml"}"#,
                #"format must be ndjson or csv, not "xml""#
            ),
            (#"{"kind":"prune","store":"s","older_than":"1e300s"}"#, "older_than must be a duration from 0s to 36500d"),
            (#"{"kind":"prune","store":"s","older_than":"7d","before":"3"}"#, "give before or older_than, not both"),
            (#"{"kind":"vacuum","store":"s"}"#, "kind must be one of import, delete, update, dedupe, export, prune")
        ]
        for (body, message) in cases {
            let refused = Self.refusal(body)
            #expect(refused?.contains(message) == true, "\(body): \(refused ?? "accepted")")
        }
    }

    @Test("a record keeps its spec under the same keys and reads back as it was")
    func roundTrip() throws {
        let bodies = [
            #"{"kind":"import","store":"s","entity":"Trip","path":"/x.tsv","on_conflict":"fail","max_rejects":"0.5"}"#,
            #"{"kind":"update","store":"s","entity":"Trip","set":{"budget":1.5,"name":"x","id":7}}"#,
            #"{"kind":"dedupe","store":"s","entity":"Trip","by":["name","startDate"],"where":"budget > 0"}"#,
            #"{"kind":"export","store":"s","entity":"Trip","path":"/out.csv","format":"csv"}"#,
            #"{"kind":"prune","store":"s","older_than":"1500ms"}"#,
            #"{"kind":"prune","store":"s","before":"12"}"#,
            #"{"kind":"delete","store":"s","entity":"Trip","where":"destination == nil"}"#
        ]
        for body in bodies {
            let submission = try Self.submission(body)
            let record = JobRecord(id: "j1", spec: submission.spec, store: submission.store, author: "t")
            let data = try JSONEncoder().encode(record)
            #expect(try JSONDecoder().decode(JobRecord.self, from: data) == record, "\(body)")
            // The same keys as the body: a record is a valid submission.
            #expect(try JSONDecoder().decode(JobSubmission.self, from: data).spec == submission.spec)
        }
    }

    @Test("a finished job whose settings no longer read stays readable; an unfinished one does not")
    func finishedRecords() throws {
        let base =
            #"{"id":"j1","kind":"prune","store":"s","author":"x","created":"2026-01-01T00:00:00.000Z","older_than":"1e300s","#
        let failed = try JSONDecoder().decode(JobRecord.self, from: Data((base + #""state":"failed"}"#).utf8))
        #expect(failed.spec == nil)
        #expect(failed.state == .failed)
        #expect(throws: DepotError.self) {
            try JSONDecoder().decode(JobRecord.self, from: Data((base + #""state":"queued"}"#).utf8))
        }
    }
}
