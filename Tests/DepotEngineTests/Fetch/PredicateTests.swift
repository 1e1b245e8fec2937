import ChildProcessSupport
import Testing

@testable import DepotEngine

@Suite("Predicates")
struct PredicateTests {
    @Test("every operator selects exactly the hand-computed records", arguments: PredicateContract.cases)
    func selects(_ predicate: String, _ expected: [String]) async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        #expect(try await t.ids(predicate) == expected, "\(predicate)")
    }

    @Test("$name placeholders are bound and type-checked")
    func variables() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        #expect(
            try await t.ids(
                "startDate >= $from AND endDate < $until",
                arguments: ["from": "2025-01-01", "until": "2025-05-01"]) == ["t1", "t2"])
        #expect(try await t.ids("destination == $city", arguments: ["city": "Rome"]) == ["t3"])
        let error = await #expect(throws: DepotError.self) {
            try await t.ids("budget > $min", arguments: ["min": "lots"])
        }
        #expect(error?.code == .typeMismatch)
        #expect(error?.message.contains("$min") == true)
    }

    @Test("bad predicates are refused with the position and what was expected", arguments: PredicateContract.errors)
    func refused(_ predicate: String, _ code: DepotError.Code, _ position: Int, _ fragment: String) async throws {
        let t = try await TemporaryStore()
        let error = await #expect(throws: DepotError.self) { try await t.ids(predicate) }
        #expect(error?.code == code, "\(predicate)")
        #expect(error?.position == position, "\(predicate): \(error?.message ?? "")")
        #expect(error?.message.contains(fragment) == true, "\(predicate): \(error?.message ?? "")")
    }

    @Test("values are bound as parameters, never pasted into the SQL")
    func boundNotPasted() throws {
        let entity = try TemporaryStore.tripEntity()
        let compiled = try PredicateCompiler.compile(
            #"name == "Robert'); DROP TABLE Trip; --" AND budget > 12345 OR notes CONTAINS[cd] "Zürich""#,
            entity: entity)
        #expect(!compiled.sql.contains("Robert"))
        #expect(!compiled.sql.contains("12345"))
        #expect(!compiled.sql.contains("urich"))
        #expect(compiled.arguments == ["Robert'); DROP TABLE Trip; --", .double(12345), "zurich"])
    }

    @Test("LIKE patterns become GLOB patterns with literal brackets and escaped wildcards")
    func globConversion() {
        #expect(SQLiteDialect.glob(fromLike: "a*b?") == "a*b?")
        #expect(SQLiteDialect.glob(fromLike: "[x]") == "[[]x]")
        #expect(SQLiteDialect.glob(fromLike: #"100\*"#) == "100[*]")
    }

    @Test("case and diacritic folding is Unicode-aware")
    func folding() {
        #expect(TextFolding.fold("Zürich", flags: 3) == "zurich")
        #expect(TextFolding.fold("ÉCOLE Ça", flags: 3) == "ecole ca")
        #expect(TextFolding.fold("Zürich", flags: 1) == "zürich")
        #expect(TextFolding.fold("Zürich", flags: 2) == "Zurich")
        #expect(TextFolding.fold("ΣΟΦΙΑ", flags: 1) == "σοφια")
    }
}
