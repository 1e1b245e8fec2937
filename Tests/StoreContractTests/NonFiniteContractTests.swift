import DepotEngine
import Foundation
import Testing

/// Issue 51: no write path stores an infinity, and an aggregate whose result
/// no number holds is `out_of_range`, on every backend. A computed update
/// `d * 1e308` had stored ±Inf in a required `double` (reads then served
/// null); `sum`/`avg` of two `1e308` answered `500`.
@Suite("Non-finite contract: no infinity stored, aggregates that overflow refused")
struct NonFiniteContractTests {
    static func entities() throws -> [EntitySchema] {
        try EntityDeclaration.resolve([
            EntityDeclaration(
                name: "Trip",
                fields: [
                    Field(name: "id", type: .string), Field(name: "d", type: .double),
                    Field(name: "n", type: .int)
                ],
                identifier: ["id"], history: .values)
        ])
    }

    static func script(_ backend: any Backend) async throws -> [String] {
        var batch = RecordBatch(entity: "Trip", columns: ["id", "d", "n"])
        batch.append(["a", 1e308, .int(Int64.max)])
        batch.append(["b", 1e308, .int(Int64.max)])
        batch.append(["c", 0.5, 1])
        _ = try await backend.write(batch)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nonfinite-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var out: [String] = []
        for (field, function) in [("d", AggregateFunction.sum), ("d", .avg), ("n", .sum)] {
            do {
                let r = try await backend.contract.reads.aggregate(
                    AggregateRequest(entity: "Trip", field: field, functions: [function], where: "id != 'c'"))
                out.append("\(function.rawValue)(\(field)): \(r.rows.map(\.values))")
            } catch let error as DepotError {
                out.append("\(function.rawValue)(\(field)): \(error.code)")
            }
        }
        for (k, expression) in ["d * 1e308", "-(d * 1e308)", "d / 2"].enumerated() {
            do {
                let c = try await backend.contract.update(
                    entity: "Trip", where: nil, set: [:], compute: ["d": expression], author: "u\(k)",
                    batchSize: 2, rejectsPath: "\(folder)/\(k).ndjson")
                out.append("\(expression): updated \(c.updated) rejected \(c.rejected)")
            } catch let error as DepotError {
                out.append("\(expression): \(error.code)")
            }
        }
        // Whatever each backend did with the overflowing records, none holds
        // a value that is not a finite number.
        for row in try await backend.records("Trip") {
            if case .double(let d) = row[1], !d.isFinite { out.append("stored \(d) in \(row[0])") }
        }
        // Finite ones still answer.
        let finite = try await backend.contract.reads.aggregate(
            AggregateRequest(entity: "Trip", field: "n", functions: [.sum], where: "id == 'c'"))
        out.append("sum(n) of c: \(finite.rows.map(\.values))")
        return out
    }

    @Test("computed overflow is never stored; overflowing aggregates are out_of_range")
    func overflow() async throws {
        let answers = try await Backends.answers(
            entities: Self.entities(), extra: [Backends.sqliteRecordByRecord], Self.script)
        for (name, out) in answers {
            #expect(!out.contains { $0.hasPrefix("stored") }, "\(name): \(out)")
            #expect(out.contains("sum(d): out_of_range"), "\(name): \(out)")
            #expect(out.contains("avg(d): out_of_range"), "\(name): \(out)")
            #expect(out.contains("sum(n): out_of_range"), "\(name): \(out)")
            #expect(out.contains("sum(n) of c: [[1]]"), "\(name): \(out)")
            if name.hasPrefix("sqlite") {
                // Each overflowing record rejected, as a null in a required field is.
                #expect(out.contains("d * 1e308: updated 1 rejected 2"), "\(name): \(out)")
                #expect(out.contains("-(d * 1e308): updated 0 rejected 3"), "\(name): \(out)")
            } else {
                // PostgreSQL's arithmetic fails the statement: the job is refused whole.
                #expect(out.contains("d * 1e308: out_of_range"), "\(name): \(out)")
                #expect(out.contains("-(d * 1e308): out_of_range"), "\(name): \(out)")
            }
            #expect(out.contains("d / 2: updated 3 rejected 0"), "\(name): \(out)")
        }
    }
}
