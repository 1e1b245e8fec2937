import DepotEngine
import Foundation
import Testing

/// Renames (`renamed_from`, DESIGN §18) on both backends: an entity and a
/// field held under their old names are renamed in place when the store
/// opens, once, records and history kept and read under the new names; a
/// rename onto a field the store holds is refused, naming both.
@Suite("Rename contract: renamed_from on SQLite and PostgreSQL")
struct RenameContractTests {
    /// Trip as Voyage, its `note` as `remark`; with `ontoExisting`, also
    /// `nights` as `qty`, a field the store holds.
    static func voyage(ontoExisting: Bool = false) throws -> EntitySchema {
        var declaration = EntityDeclaration(
            name: "Voyage",
            fields: [
                Field(name: "id", type: .string), Field(name: "destination", type: .string),
                Field(name: "budget", type: .double)
            ] + (ontoExisting ? [] : [Field(name: "nights", type: .int)]) + [
                Field(name: "qty", type: .int), Field(name: "remark", type: .string, isOptional: true),
                Field(name: "checked", type: .date, isOptional: true)
            ],
            identifier: ["id"], preserveOnDelete: ["remark"], history: .values)
        declaration.renamedFrom = "Trip"
        declaration.fieldsRenamedFrom = ["remark": "note"]
        if ontoExisting { declaration.fieldsRenamedFrom["qty"] = "nights" }
        return try EntityDeclaration.resolve([declaration])[0]
    }

    static func history(_ backend: any Backend) async throws -> [String] {
        try await backend.contract.reads.history(after: nil, entity: nil, author: nil, limit: 1_000).flatMap {
            $0.changes.map { c in
                "\(c.entity) \(c.kind) \(c.identifier) \(c.fields ?? []) n=\(c.new ?? "-") t=\(c.tombstone ?? "-")"
            }
        }
    }

    static func script(_ backend: any Backend) async throws -> [String] {
        var backend = backend
        var out: [String] = []
        try await ComputeContractTests.load(backend)
        try await backend.contract.update(
            entity: "Trip", where: "id == 't1'", set: ["note": .string("window seat")], author: "t")
        try await backend.contract.delete(entity: "Trip", where: "id == 't4'", author: "t")
        backend = try await backend.reopen(entities: [try Self.voyage()])
        out.append("entities: \(backend.contract.reads.entities.map(\.name))")
        out.append("fields: \(try backend.contract.reads.entity("Voyage").fields.map(\.name))")
        out.append("records: \(try await backend.records("Voyage"))")
        out.append(
            "fetch: \(try await backend.count(FetchDescriptor(entity: "Voyage", where: "remark == 'window seat'")))")
        out += try await Self.history(backend)
        // Opened again with the same configuration: nothing left to rename.
        backend = try await backend.reopen(entities: [try Self.voyage()])
        out.append(
            "again: \(try await backend.records("Voyage").count) records, \(try await Self.history(backend).count) changes"
        )
        // A rename onto a field the store holds.
        do {
            backend = try await backend.reopen(entities: [try Self.voyage(ontoExisting: true)])
            out.append("onto a field: opened")
        } catch let error as DepotError {
            out.append("onto a field: \(error.code) \(error.message)")
            backend = try await backend.reopen(entities: [try Self.voyage()])
        }
        await backend.close()
        return out
    }

    @Test(
        "an entity and a field renamed once on open, records and history read under the new names, alike on each backend"
    )
    func script() async throws {
        let answers = try await Backends.answers(entities: ComputeContractTests.trips(), Self.script)
        for (name, out) in answers {
            #expect(out[0] == #"entities: ["Voyage"]"#, "\(name): \(out)")
            #expect(
                out[1] == #"fields: ["id", "destination", "budget", "nights", "qty", "remark", "checked"]"#,
                "\(name): \(out)")
            #expect(out[2].contains(#""window seat""#) && !out[2].contains("Oslo"), "\(name): \(out)")
            #expect(out[3] == "fetch: 1", "\(name): \(out)")
            let history = out.filter { $0.hasPrefix("Voyage ") || $0.hasPrefix("Trip ") }
            #expect(history.count == 6 && history.allSatisfy { $0.hasPrefix("Voyage ") }, "\(name): \(out)")
            #expect(
                history.contains { $0.contains(#"update "t1" ["remark"] n={"remark":"window seat"}"#) },
                "\(name): \(history)")
            #expect(
                history.contains { $0.contains(#"insert "t2" [] n={"id":"t2""#) && $0.contains(#""remark":null"#) },
                "\(name): \(history)")
            #expect(out[out.count - 2] == "again: 3 records, 6 changes", "\(name): \(out)")
            #expect(
                out.last!.hasPrefix("onto a field: migration_refused")
                    && out.last!.contains(#"field "qty": renamed_from "nights", but the store holds both fields"#),
                "\(name): \(out)")
        }
        #expect(answers.count < 2 || answers[0].1 == answers[1].1)
    }
}
