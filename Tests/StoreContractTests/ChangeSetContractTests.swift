import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// Saves (DESIGN §16, issue 31): a change set applied all or nothing, on
/// both backends, through the one implementation above the write context.
@Suite("Change set contract: saves on SQLite and PostgreSQL")
struct ChangeSetContractTests {
    typealias Change = ChangeSet.Change

    static func describe(_ r: SaveResult) -> String {
        "token \(r.token == nil ? "none" : "yes"): "
            + r.changes.map { "\($0.index) \($0.kind.rawValue) \($0.entity) \($0.identifier) \($0.effect.rawValue)" }
            .joined(separator: ", ")
    }

    static func describe(_ refusal: SaveRefusal) -> String {
        "refused: "
            + refusal.failures.map { "\($0.index) \($0.code.rawValue)" + ($0.field.map { " \($0)" } ?? "") }
            .joined(separator: ", ")
    }

    /// The script's outcomes, then the state it leaves.
    static func script(_ backend: any Backend) async throws -> [String] {
        try await BatchContractTests.load(backend)
        let start = try await backend.contract.reads.latestToken()
        let store = backend.contract
        var out: [String] = []
        func step(_ name: String, _ changes: [Change]) async {
            do {
                out.append("\(name): " + describe(try await store.save(ChangeSet(changes), author: name)))
            } catch let refusal as SaveRefusal {
                out.append("\(name): " + describe(refusal))
            } catch let error as DepotError {
                out.append("\(name): \(error.code) \(error.message)")
            } catch {
                out.append("\(name): \(error)")
            }
        }
        await step(
            "s1",
            [
                Change(.insert, entity: "Order", record: ["id": "o9", "total": 9.5, "customer": "c9"]),
                Change(.insert, entity: "Customer", record: ["id": "c9", "name": "Eve"]),
                Change(.update, entity: "Order", identifier: ["o4"], set: ["total": 41])
            ])
        await step(
            "s2",
            [
                Change(.insert, entity: "Customer", record: ["id": "c1", "name": "Ada again"]),
                Change(.update, entity: "Order", identifier: ["o99"], set: ["total": 1]),
                Change(.update, entity: "Order", identifier: ["o1"], set: ["total": "lots"]),
                Change(.insert, entity: "Order", record: ["id": "o10", "total": 1, "customer": "c77"]),
                Change(.delete, entity: "Note", identifier: [3]),
                Change(.update, entity: "Note", identifier: [3], set: ["text": "again"]),
                Change(.insert, entity: "Customer", record: ["id": "c10"])
            ])
        await step("s3", [Change(.delete, entity: "Customer", identifier: ["c1"])])
        await step("s4", [Change(.delete, entity: "Customer", identifier: ["c3"])])
        await step("s5", [Change(.update, entity: "Order", identifier: ["o3"], set: ["total": 30])])
        await step(
            "s6",
            [
                Change(.upsert, entity: "Customer", record: ["id": "c2", "name": "Bob"]),
                Change(.replace, entity: "Order", record: ["id": "o3", "total": 31]),
                Change(.upsert, entity: "Customer", record: ["id": "c11", "name": "Fay"])
            ])
        await step(
            "s7",
            [
                Change(.insert, entity: "Order", record: ["id": "o11", "total": 1, "customer": "c4"]),
                Change(.delete, entity: "Customer", identifier: ["c4"])
            ])
        await step("s8", [])
        await step("s9", [Change(.insert, entity: "Shop", record: ["id": "x"])])
        return out + (try await BatchContractTests.state(backend, after: start))
    }

    @Test("one script of saves gives the same outcomes, refusals, records and history on each backend")
    func script() async throws {
        let answers = try await Backends.answers(entities: BatchContractTests.shop(), Self.script)
        for (name, out) in answers {
            // Worked out by hand. An order naming a customer the same save inserts later.
            #expect(
                out[0]
                    == #"s1: token yes: 0 insert Order ["o9"] inserted, 1 insert Customer ["c9"] inserted, 2 update Order ["o4"] updated"#,
                "\(name): \(out)")
            // Every failing change, by index; nothing written.
            #expect(
                out[1]
                    == "s2: refused: 0 already_exists, 1 not_found, 2 invalid_value total, 3 dangling_reference customer, "
                    + "5 duplicate_change, 6 invalid_value name",
                "\(name): \(out)")
            // c1 and its two orders; its note's reference set to null: one transaction.
            #expect(out[2] == #"s3: token yes: 0 delete Customer ["c1"] deleted"#, "\(name): \(out)")
            #expect(out[3].hasPrefix("s4: refused: 0 denied_by_delete_rule"), "\(name): \(out)")
            // An update to what is stored: nothing logged, no token.
            #expect(out[4] == #"s5: token none: 0 update Order ["o3"] unchanged"#, "\(name): \(out)")
            #expect(
                out[5]
                    == #"s6: token yes: 0 upsert Customer ["c2"] updated, 1 replace Order ["o3"] updated, 2 upsert Customer ["c11"] inserted"#,
                "\(name): \(out)")
            // A reference to a record the same save deletes.
            #expect(out[6] == "s7: refused: 0 dangling_reference customer", "\(name): \(out)")
            #expect(out[7].contains("invalid_argument a save needs at least one change"), "\(name): \(out)")
            #expect(out[8].contains("unknown_entity"), "\(name): \(out)")
            // What stands: o9 under c9; o3 replaced (no customer); c1's orders gone.
            #expect(
                out.contains(#"Order: [["o3", 31.0, nil], ["o4", 41.0, nil], ["o5", 50.0, "c4"], ["o9", 9.5, "c9"]]"#),
                "\(name): \(out)")
            // One history transaction per applied save, by its author.
            #expect(
                out.filter { $0.hasPrefix("txn ") }.map { String($0.prefix(6)) } == ["txn s1", "txn s3", "txn s6"],
                "\(name): \(out)")
            #expect(
                out.contains {
                    $0.hasPrefix("txn s3: delete Customer \"c1\"") && $0.contains("delete Order \"o1\"")
                        && $0.contains("update Note 1 [\"about\"]")
                }, "\(name): \(out)")
        }
        for (name, out) in answers.dropFirst() {
            #expect(out == answers[0].1, "\(name) differs from \(answers[0].0)")
        }
    }
}
