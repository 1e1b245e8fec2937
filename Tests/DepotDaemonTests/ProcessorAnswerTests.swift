import DepotWire
import Foundation
import Testing

@testable import DepotDaemon
@testable import DepotEngine

/// A processor commit's answer is written by hand (`commitAnswer`), not by
/// `JSONEncoder`: it must read back as the answer `JSONEncoder` writes,
/// for identifiers of every kind.
@Suite("Processor commit answers")
struct ProcessorAnswerTests {
    @Test("the hand-written answer reads back as the encoded one")
    func sameAsEncoded() throws {
        let identifiers: [[Value]] = [
            [.string("plain")], [.string("quote\" back\\ slash/ tab\t nl\n ctl\u{01}\u{1f} del\u{7f} é 🚀 <&>")],
            [.int(0)], [.int(.min)], [.int(.max)], [.string("2025-03-14T10:00:00.000Z")],
            [.int(7), .string("it's \"k\"")], [.double(0.1)], [.double(-1e300)], [.bool(true)], [.null]
        ]
        let effects: [ChangeOutcome.Effect] = [.updated, .unchanged, .inserted, .deleted]
        let kinds: [ChangeSet.Kind] = [.update, .insert, .upsert, .replace, .delete]
        var state = ProcessorState(
            name: "all \"of\" them", entity: "Trip", where: "budget > 1", batch: 500, lease: "30s",
            created: "2026-11-27T10:00:00.000Z", total: 10, done: 5, batches: 2, batchesDone: 1, leased: 1)
        state.eta = 1.5
        for token in [nil, HistoryToken(41)] {
            let result = SaveResult(
                token: token,
                changes: identifiers.enumerated().map { i, id in
                    ChangeOutcome(
                        index: i, entity: i % 2 == 0 ? "Trip" : "Entité \"x\"", identifier: id,
                        kind: kinds[i % kinds.count], effect: effects[i % effects.count])
                })
            let answer = ControlRoutes.answer(result)
            let expected = ProcessorCommitAnswer(token: answer.token, changes: answer.changes, processor: state)
            let written = try ControlRoutes.commitAnswer(result, processor: state)
            #expect(try JSONDecoder().decode(ProcessorCommitAnswer.self, from: Data(written)) == expected)
            // The same members, none more: as trees.
            let tree = try JSONDecoder().decode(JSONValue.self, from: Data(written))
            let encoded = try JSONDecoder().decode(JSONValue.self, from: WireJSON.encoder.encode(expected))
            #expect(tree == encoded, "\(String(decoding: written, as: UTF8.self))")
        }
    }
}
