@testable import DepotEngine
import Testing

@Suite("Predicates")
struct PredicateTests {
    /// Each predicate with the sample trips it selects, computed by hand from
    /// `TemporaryStore.sampleTrips`.
    static let cases: [(String, [String])] = [
        (#"destination == "Paris""#, ["t1", "t5"]),
        (#"destination = 'Paris'"#, ["t1", "t5"]),
        (#""Paris" == destination"#, ["t1", "t5"]),
        (#"destination != "Paris""#, ["t2", "t3", "t4", "t6"]),
        (#"destination <> "Paris" AND destination != nil"#, ["t2", "t3", "t6"]),
        ("budget > 1000", ["t1", "t5"]),
        ("budget >= 1000", ["t1", "t5", "t6"]),
        ("budget < 700", ["t4"]),
        ("budget <= 700", ["t3", "t4"]),
        ("budget =< 700", ["t3", "t4"]),
        ("1000 < budget", ["t1", "t5"]),
        ("budget > 1e3", ["t1", "t5"]),
        ("budget == 2500.5", ["t5"]),
        ("budget BETWEEN {100, 1000}", ["t2", "t3", "t6"]),
        (#"name CONTAINS "trip""#, ["t4", "t5"]),
        (#"name CONTAINS[c] "ZURICH""#, ["t6"]),
        (#"name CONTAINS[cd] "zurich""#, ["t2", "t6"]),
        (#"name contains[d] "Zurich""#, ["t2"]),
        (#"destination ==[cd] "zurich""#, ["t2", "t6"]),
        (#"destination ==[c] "ZURICH""#, ["t6"]),
        (#"name BEGINSWITH "R""#, ["t3", "t5"]),
        (#"name BEGINSWITH[c] "r""#, ["t3", "t5"]),
        (#"name ENDSWITH "trip""#, ["t4", "t5"]),
        (#"name ENDSWITH[c] "TRIP""#, ["t4", "t5"]),
        (#"NOT (name BEGINSWITH "Test") AND name ENDSWITH[c] "trip""#, ["t5"]),
        (#"name LIKE "*trip""#, ["t4", "t5"]),
        (#"name LIKE[c] "par*""#, ["t1"]),
        (#"name LIKE "R?ad*""#, ["t5"]),
        (#"destination IN {"Paris", "Rome"}"#, ["t1", "t3", "t5"]),
        (#"destination IN[c] {"ZURICH", "nowhere"}"#, ["t6"]),
        ("destination IN {}", []),
        ("notes == nil", ["t2", "t4"]),
        ("notes == NULL", ["t2", "t4"]),
        ("notes != nil", ["t1", "t3", "t5", "t6"]),
        (#"notes == """#, ["t6"]),
        ("isFavorite == true", ["t1", "t3", "t6"]),
        ("isFavorite == YES", ["t1", "t3", "t6"]),
        (#"isFavorite == false OR destination IN {"Rome"}"#, ["t2", "t3", "t4", "t5"]),
        (#"isFavorite == false || destination == "Rome""#, ["t2", "t3", "t4", "t5"]),
        (#"startDate >= "2025-01-01" AND endDate < "2025-05-01""#, ["t1", "t2"]),
        (#"startDate > "2025-07-14T00:00:00+02:00""#, ["t5", "t6"]),
        (#"startDate < "2025-01-01T00:00:00Z""#, ["t4"]),
        (#"startDate BEGINSWITH "2025-0""#, ["t1", "t2", "t3", "t5"]),
        ("endDate > startDate", ["t1", "t2", "t5"]),
        (#"notes CONTAINS "\"Trevi\"" && isFavorite == YES"#, ["t3"]),
        (#"name CONTAINS "\u00fc""#, ["t2"]),
        (#"name CONTAINS 'Z\u00FCrich b'"#, ["t2"]),
        ("TRUEPREDICATE", ["t1", "t2", "t3", "t4", "t5", "t6"]),
        ("FALSEPREDICATE", []),
        ("   ", ["t1", "t2", "t3", "t4", "t5", "t6"]),
        (#"name == "x' OR 1=1 --""#, []),
        (#"name == "Robert'); DROP TABLE Trip; --""#, []),
        ("!(budget > 0)", ["t4"]),
        (#"destination in {"Rome"} and budget between {0, 800}"#, ["t3"]),
        (#"(budget > 2000 OR budget < 100) AND NOT isFavorite == true"#, ["t4", "t5"]),
    ]

    @Test("every operator selects exactly the hand-computed records", arguments: cases)
    func selects(_ predicate: String, _ expected: [String]) async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        #expect(try await t.ids(predicate) == expected, "\(predicate)")
    }

    @Test("$name placeholders are bound and type-checked")
    func variables() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        #expect(try await t.ids("startDate >= $from AND endDate < $until",
                                arguments: ["from": "2025-01-01", "until": "2025-05-01"]) == ["t1", "t2"])
        #expect(try await t.ids("destination == $city", arguments: ["city": "Rome"]) == ["t3"])
        let error = await #expect(throws: DepotError.self) {
            try await t.ids("budget > $min", arguments: ["min": "lots"])
        }
        #expect(error?.code == .typeMismatch)
        #expect(error?.message.contains("$min") == true)
    }

    /// Predicates that must be refused: the code, the 1-based position, and a
    /// fragment of the message.
    static let errors: [(String, DepotError.Code, Int, String)] = [
        ("budget >", .invalidPredicate, 9, "expected a value after >, found the end of the predicate"),
        ("budget > 1000 AND", .invalidPredicate, 18, "expected a field name"),
        ("(budget > 1", .invalidPredicate, 12, "expected \")\""),
        (#"destination == "Paris"#, .invalidPredicate, 16, "unterminated string"),
        ("budget >> 5", .invalidPredicate, 9, "found \">\""),
        ("budgett > 5", .unknownField, 1, "did you mean \"budget\""),
        (#"budget > "abc""#, .typeMismatch, 10, "field \"budget\" is double"),
        ("isFavorite > true", .typeMismatch, 1, "can only be compared with ==, != or IN"),
        (#"budget CONTAINS "1""#, .typeMismatch, 1, "CONTAINS applies to text fields"),
        (#"budget ==[c] 1"#, .typeMismatch, 1, "[c] applies to text fields"),
        (#"startDate > "yesterday""#, .typeMismatch, 13, "not an ISO 8601 date"),
        ("name == $who", .invalidPredicate, 9, "no value was given for $who"),
        (#"name == "a" name == "b""#, .invalidPredicate, 13, "expected AND, OR or the end"),
        ("AND == 1", .invalidPredicate, 1, "found the keyword AND"),
        (#"destination IN "Paris""#, .invalidPredicate, 16, "needs a list in braces"),
        ("budget BETWEEN {1}", .invalidPredicate, 16, "exactly two values"),
        (#"name =[x] "a""#, .invalidPredicate, 7, "unknown comparison options"),
        ("notes > nil", .typeMismatch, 9, "nil can only be compared with == or !="),
        (#"name == "bad \q escape""#, .invalidPredicate, 14, "unknown escape"),
        ("name == 'x' & budget > 1", .invalidPredicate, 13, "did you mean &&"),
        ("`unterminated", .invalidPredicate, 1, "closing ` is missing"),
        ("endDate > budget", .typeMismatch, 1, "cannot be compared"),
        ("budget == 1.2.3", .invalidPredicate, 11, "is not a number"),
    ]

    @Test("bad predicates are refused with the position and what was expected", arguments: errors)
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
        #expect(PredicateCompiler.glob(fromLike: "a*b?") == "a*b?")
        #expect(PredicateCompiler.glob(fromLike: "[x]") == "[[]x]")
        #expect(PredicateCompiler.glob(fromLike: #"100\*"#) == "100[*]")
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
