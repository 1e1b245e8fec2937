import DepotEngine
import DepotWire
import Foundation
import GRDB
import Testing

/// A save of many updates of the same fields (a processor's commit, a
/// client's batch of edits) written in a few statements (an SQLite store's
/// bulk path, ``WriteContext/bulkSet(_:fields:rows:)``) against the same
/// saves written change by change, and against PostgreSQL: the outcomes,
/// refusals, records and history must be the same, for values of every
/// type and the identifiers that are hard for SQL to write as Swift does.
@Suite("Bulk saves: the same as change by change, on SQLite and PostgreSQL")
struct BulkSaveContractTests {
    typealias Change = ChangeSet.Change

    /// The bulk update suite's nasty identifiers, and plain ones to pass the bulk path's least.
    static let ids = BulkUpdateContractTests.ids + (0..<28).map { "item \($0)" }

    static func script(_ backend: any Backend) async throws -> [String] {
        try await BulkUpdateContractTests.load(backend, ids: ids, pairs: 20)
        let start = try await backend.contract.reads.latestToken()
        let store = backend.contract
        var out: [String] = []
        func save(_ name: String, _ changes: [Change]) async {
            do {
                out.append(
                    "\(name): "
                        + ChangeSetContractTests.describe(try await store.save(ChangeSet(changes), author: name)))
            } catch let refusal as SaveRefusal {
                out.append(
                    "\(name): refused "
                        + refusal.failures.map { "\($0.index) \($0.code.rawValue) \($0.field ?? "-") \($0.message)" }
                        .joined(separator: "; "))
            } catch let error as DepotError {
                out.append("\(name): \(error.code) \(error.message)")
            } catch {
                out.append("\(name): \(error)")
            }
        }
        func every(_ set: (Int) -> [String: Value]) -> [Change] {
            ids.indices.map { Change(.update, entity: "Item", identifier: [.string(ids[$0])], set: set($0)) }
        }
        // A double; every third record holds its value already (unchanged, not logged).
        await save(
            "d",
            every {
                .init(uniqueKeysWithValues: [
                    ("d", $0 % 3 == 0 ? .double(Double($0) * 12.34 + 0.1) : .double(Double($0) / 3))
                ])
            })
        // Every other type at once, nulls among them; an integer given for a double.
        let mixed = every { i in
            [
                "b": .bool(i % 2 == 0), "j": i % 5 == 0 ? .null : .string(#"{"x": [\#(i), "two"], "y": null}"#),
                "s": i % 3 == 0 ? .null : .string("it's \"\(ids[i])\"\n"),
                "day": .string("2025-03-\(10 + i % 18)"), "q": i % 4 == 0 ? .null : .int(Int64(i) << 40),
                "n": .int(Int64.max - Int64(i)), "d": .int(Int64(i) * 1000)
            ]
        }
        await save("mixed", mixed)
        // The same again: nothing changes, and there is no transaction.
        await save("again", mixed)
        // A compound identifier.
        await save(
            "pairs",
            (0..<20).map {
                Change(
                    .update, entity: "Pair", identifier: [.int(Int64($0 % 2)), .string(ids[$0])],
                    set: ["v": .double(Double($0) * 0.1)])
            })
        // Saves the bulk path declines, refused as change by change refuses them.
        var missing = every { ["n": .int(Int64($0))] }
        missing[17] = Change(.update, entity: "Item", identifier: ["nobody"], set: ["n": 1])
        await save("missing", missing)
        var twice = every { ["n": .int(Int64($0))] }
        twice[30] = Change(.update, entity: "Item", identifier: [.string(ids[2])], set: ["n": 5])
        await save("twice", twice)
        var null = every { ["n": .int(Int64($0))] }
        null[9] = Change(.update, entity: "Item", identifier: [.string(ids[9])], set: ["n": .null])
        await save("null", null)
        var wrong = every { ["n": .int(Int64($0))] }
        wrong[3] = Change(.update, entity: "Item", identifier: [.string(ids[3])], set: ["n": "three"])
        await save("wrong type", wrong)
        // Other fields in one change: change by change, the same outcome.
        var other = every { ["n": .int(Int64($0) + 1)] }
        other[4] = Change(.update, entity: "Item", identifier: [.string(ids[4])], set: ["n": 0, "b": true])
        await save("other fields", other)
        // Fewer than the bulk path's least.
        await save("few", Array(every { ["q": .int(Int64($0))] }.prefix(5)))
        out.append("Item: \(try await backend.records("Item"))")
        out.append("Pair: \(try await backend.records("Pair"))")
        out += try await BulkUpdateContractTests.changes(store, after: start)
        for id in ids {
            let own = try await store.reads.recordHistory("Item", identifier: [.string(id)], limit: 100)
            out.append(
                "\(id): \(own.map { "\($0.author) \($0.changes.map { "\($0.fields ?? []) \($0.old ?? "-") \($0.new ?? "-")" })" })"
            )
        }
        return out
    }

    @Test("the same outcomes, refusals, records and history as change by change, on each backend")
    func sameAsChangeByChange() async throws {
        let answers = try await Backends.answers(
            entities: BulkUpdateContractTests.entities(), extra: [Backends.sqliteRecordByRecord], Self.script)
        let out = answers[0].1
        let n = Self.ids.count
        #expect(out[0].hasPrefix("d: token yes: 0 update Item"), "\(out[0])")
        #expect(out[0].components(separatedBy: " unchanged").count - 1 == (n + 2) / 3, "\(out[0])")
        #expect(out[1].components(separatedBy: " updated").count - 1 == n, "\(out[1])")
        #expect(out[2].hasPrefix("again: token none"), "\(out[2])")
        #expect(out[2].components(separatedBy: " unchanged").count - 1 == n, "\(out[2])")
        // Pair 0 holds 0 already.
        #expect(out[3].components(separatedBy: " updated").count - 1 == 19, "\(out[3])")
        #expect(out[4].hasPrefix("missing: refused 17 not_found - there is no Item \"nobody\""), "\(out[4])")
        #expect(out[5].hasPrefix("twice: refused 30 duplicate_change - change 2 already changes"), "\(out[5])")
        #expect(out[6].hasPrefix("null: refused 9 invalid_value n "), "\(out[6])")
        #expect(out[7].hasPrefix("wrong type: refused 3 invalid_value n "), "\(out[7])")
        #expect(out[8].components(separatedBy: " updated").count - 1 == n, "\(out[8])")
        #expect(out[9].components(separatedBy: " updated").count - 1 == 5, "\(out[9])")
        for (name, other) in answers.dropFirst() {
            #expect(other.count == out.count, "\(name)")
            for (a, b) in zip(out, other) { #expect(a == b, "\(name) differs from \(answers[0].0)") }
        }
    }

    /// The history's text, in its order, is that of change by change; and
    /// the bulk path did write (its rows keep values as arrays, the
    /// change-by-change path's as objects).
    @Test("the history in its order, and the bulk path taken")
    func historyText() async throws {
        let (texts, arrays) = try await BulkUpdateContractTests.historyTexts(
            Self.script, raw: "identifier || ' ' || coalesce(fields, '-')")
        // Saves d and mixed went in bulk (pairs keep no values): 26 and 40 changes.
        #expect(arrays == [66, 0, 0, 0], "\(arrays)")
        #expect(texts[0].count > 100)
        #expect(texts[0] == texts[2])
        #expect(texts[1] == texts[3])
    }
}
