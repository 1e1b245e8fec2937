import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// Optimistic concurrency (DESIGN §16, issue 31): each record keeps the
/// token of its last change, and a change read at a token merges with the
/// saves since under the merge policies; the same on both backends.
@Suite("Merge contract: record tokens and merge policies on SQLite and PostgreSQL")
struct MergeContractTests {
    typealias Change = ChangeSet.Change

    static func describe(_ refusal: SaveRefusal) -> String {
        "refused: "
            + refusal.failures.map { f in
                "\(f.index) \(f.code.rawValue)"
                    + f.conflicts.map { c in
                        " \(c.field) \(c.base.map { "\($0)" } ?? "?")→\(c.stored) yours \(c.yours)"
                    }.joined()
            }.joined(separator: ",")
    }

    static func script(_ backend: any Backend) async throws -> [String] {
        try await BatchContractTests.load(backend)
        let store = backend.contract
        var out: [String] = []
        func token(_ entity: String, _ id: Value) async throws -> HistoryToken {
            try #require(try await store.reads.record(entity, identifier: [id])).token
        }
        func values(_ entity: String, _ id: Value) async throws -> String {
            guard let v = try await store.reads.record(entity, identifier: [id]) else { return "none" }
            return v.values.map { "\($0)" }.joined(separator: " ")
        }
        @discardableResult
        func step(_ name: String, merge: ChangeSet.MergePolicy = .error, _ changes: [Change]) async -> HistoryToken? {
            do {
                let result = try await store.save(ChangeSet(changes, merge: merge), author: name)
                out.append(
                    "\(name): " + result.changes.map { $0.effect.rawValue }.joined(separator: ",")
                        + (result.token == nil ? " (no token)" : ""))
                return result.token
            } catch let refusal as SaveRefusal {
                out.append("\(name): " + describe(refusal))
            } catch {
                out.append("\(name): \(error)")
            }
            return nil
        }
        // Every record stored by the load carries the token of its save.
        let loaded = try await store.reads.latestToken()
        out.append("loaded c1 at last token: \(try await token("Customer", "c1") <= loaded!)")
        let t1 = try await step("s1", [Change(.update, entity: "Customer", identifier: ["c1"], set: ["name": "Ann"])])
        out.append("c1's token is s1's: \(try await token("Customer", "c1") == t1)")
        // Another save changes the name; an edit read at t1 of another field merges.
        let t2 = try await step("s2", [Change(.update, entity: "Customer", identifier: ["c1"], set: ["name": "Bea"])])
        await step(
            "s3",
            [Change(.update, entity: "Order", identifier: ["o1"], set: ["total": 11])]
                + [Change(.upsert, entity: "Customer", record: ["id": "c2", "name": "Bob"], ifToken: t1)])
        // The same field: a conflict with base, stored and yours.
        await step("s4", [Change(.update, entity: "Customer", identifier: ["c1"], set: ["name": "Cat"], ifToken: t1)])
        // Read at the record's token: no conflict.
        await step("s5", [Change(.update, entity: "Customer", identifier: ["c1"], set: ["name": "Dee"], ifToken: t2)])
        let t5 = try await token("Customer", "c1")
        _ = try await step("s6", [Change(.update, entity: "Customer", identifier: ["c1"], set: ["name": "Eve"])])
        await step(
            "s7", merge: .objectTrump,
            [Change(.update, entity: "Customer", identifier: ["c1"], set: ["name": "Fay"], ifToken: t5)])
        out.append("c1 after object-trump: \(try await values("Customer", "c1"))")
        await step(
            "s8", merge: .storeTrump,
            [Change(.update, entity: "Customer", identifier: ["c1"], set: ["name": "Gus"], ifToken: t5)])
        out.append("c1 after store-trump: \(try await values("Customer", "c1"))")
        // Overwrite puts back what others changed since (values kept): o2 read at t1.
        let o2 = try await token("Order", "o2")
        await step("s9", [Change(.update, entity: "Order", identifier: ["o2"], set: ["total": 21])])
        await step(
            "s10", merge: .overwrite,
            [Change(.update, entity: "Order", identifier: ["o2"], set: ["customer": "c2"], ifToken: o2)])
        out.append("o2 after overwrite: \(try await values("Order", "o2"))")
        // Fields-only history: the conflict names the field, base unknown; overwrite cannot put back.
        let n1 = try await token("Note", 1)
        await step("s11", [Change(.update, entity: "Note", identifier: [1], set: ["text": "later"])])
        await step("s12", [Change(.update, entity: "Note", identifier: [1], set: ["text": "mine"], ifToken: n1)])
        await step(
            "s13", merge: .overwrite,
            [Change(.update, entity: "Note", identifier: [1], set: ["about": "c2"], ifToken: n1)])
        // A delete read before a change: a conflict under error, kept under store-trump, done under object-trump.
        let c4 = try await token("Customer", "c4")
        await step("s14", [Change(.update, entity: "Customer", identifier: ["c4"], set: ["name": "Dia"])])
        await step("s15", [Change(.delete, entity: "Customer", identifier: ["c4"], ifToken: c4)])
        await step("s16", merge: .storeTrump, [Change(.delete, entity: "Customer", identifier: ["c4"], ifToken: c4)])
        await step("s17", merge: .objectTrump, [Change(.delete, entity: "Customer", identifier: ["c4"], ifToken: c4)])
        // A record deleted since: recreating it read at the old token is a conflict.
        let o4 = try await token("Order", "o4")
        await step("s18", [Change(.delete, entity: "Order", identifier: ["o4"])])
        await step("s19", [Change(.upsert, entity: "Order", record: ["id": "o4", "total": 4], ifToken: o4)])
        await step(
            "s20", merge: .objectTrump,
            [Change(.upsert, entity: "Order", record: ["id": "o4", "total": 4], ifToken: o4)])
        // Tokens never issued, an insert with a token: invalid.
        await step(
            "s21",
            [
                Change(.update, entity: "Order", identifier: ["o3"], set: ["total": 1], ifToken: HistoryToken(999_999)),
                Change(.insert, entity: "Order", record: ["id": "o6", "total": 1], ifToken: t1)
            ])
        // A cascade's nullify gives the records it changes the save's token.
        let t22 = try await step("s22", [Change(.delete, entity: "Customer", identifier: ["c1"])])
        out.append("note 1 nullified at s22's token: \(try await token("Note", 1) == t22)")
        return out
    }

    @Test("record tokens, and each merge policy, give the same outcomes on each backend")
    func script() async throws {
        let answers = try await Backends.answers(entities: BatchContractTests.shop(), Self.script)
        for (name, out) in answers {
            let expected = [
                "loaded c1 at last token: true",
                "s1: updated",
                "c1's token is s1's: true",
                "s2: updated",
                "s3: updated,updated",
                #"s4: refused: 0 conflict name "Ann"→"Bea" yours "Cat""#,
                "s5: updated",
                "s6: updated",
                "s7: updated",
                #"c1 after object-trump: "c1" "Fay""#,
                "s8: unchanged (no token)",
                #"c1 after store-trump: "c1" "Fay""#,
                "s9: updated",
                "s10: updated",
                #"o2 after overwrite: "o2" 20.0 "c2""#,
                "s11: updated",
                #"s12: refused: 0 conflict text ?→"later" yours "mine""#,
                "s13: refused: 0 conflict text ?→\"later\" yours nil",
                "s14: updated",
                #"s15: refused: 0 conflict name "Di"→"Dia" yours nil"#,
                "s16: unchanged (no token)",
                "s17: deleted",
                "s18: deleted",
                "s19: refused: 0 conflict total 40.0→nil yours 4.0",
                "s20: inserted",
                "s21: refused: 0 invalid_value,1 invalid_value",
                "s22: deleted",
                "note 1 nullified at s22's token: true"
            ]
            #expect(out == expected, "\(name): \(out)")
        }
    }
}
