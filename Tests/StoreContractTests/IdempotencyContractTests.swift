import DepotEngine
import Foundation
import Testing

@testable import DepotPostgres

/// Idempotency keys (DESIGN §16, issue 31): the key is kept in the save's
/// own transaction; a retry answers the first answer and writes nothing; the
/// same key with another request is refused; keys expire. Both backends.
@Suite("Idempotency contract: saves happen once, on SQLite and PostgreSQL")
struct IdempotencyContractTests {
    typealias Change = ChangeSet.Change

    static func script(_ backend: any Backend) async throws -> [String] {
        try await BatchContractTests.load(backend)
        let store = backend.contract
        var out: [String] = []
        func save(_ key: String, digest: String, _ changes: [Change], retention: Duration = .seconds(3600)) async {
            do {
                let (answer, replayed) = try await store.save(
                    ChangeSet(changes), author: "k",
                    idempotency: IdempotencyKey(key: key, digest: digest, retention: retention)
                ) { result in
                    result.changes.map { "\($0.entity) \($0.identifier) \($0.effect.rawValue)" }.joined(separator: ", ")
                        + (result.token == nil ? " no token" : " token")
                }
                out.append("\(key): \(answer)\(replayed ? " (replayed)" : "")")
            } catch let error as DepotError {
                out.append("\(key): \(error.code)")
            } catch {
                out.append("\(key): \(error)")
            }
        }
        func transactions() async throws -> Int { try await backend.history().count }
        let before = try await transactions()
        let insert = [Change(.insert, entity: "Customer", record: ["id": "c9", "name": "Nia"])]
        await save("a", digest: "d1", insert)
        await save("a", digest: "d1", insert)
        out.append("transactions added: \(try await transactions() - before)")
        // The same key with another request.
        await save("a", digest: "d2", [Change(.delete, entity: "Customer", identifier: ["c9"])])
        // A refused save keeps no key: its retry is refused again, then may succeed as another.
        await save("b", digest: "d3", insert)
        await save("b", digest: "d3", insert)
        // An expired key is forgotten: another request under it runs (else it would be refused).
        let update = [Change(.update, entity: "Customer", identifier: ["c9"], set: ["name": "Nia"])]
        await save("c", digest: "d4", update, retention: .zero)
        let kept = Timestamp.now()
        while Timestamp.now() == kept { await Task.yield() }  // the clock moves on past the key's time
        await save("c", digest: "d5", update, retention: .zero)
        out.append("records: \(try await backend.records("Customer").count)")
        return out
    }

    @Test("a retried save writes nothing and answers the first answer; another request under the key is refused")
    func script() async throws {
        let answers = try await Backends.answers(entities: BatchContractTests.shop(), Self.script)
        for (name, out) in answers {
            #expect(
                out == [
                    #"a: Customer ["c9"] inserted token"#,
                    #"a: Customer ["c9"] inserted token (replayed)"#,
                    "transactions added: 1",
                    "a: idempotency_key_reused",
                    #"b: the save was refused, nothing of it written: change 0: Customer "c9" already exists"#,
                    #"b: the save was refused, nothing of it written: change 0: Customer "c9" already exists"#,
                    #"c: Customer ["c9"] unchanged no token"#,
                    #"c: Customer ["c9"] unchanged no token"#,
                    "records: 5"
                ], "\(name): \(out)")
        }
    }
}
