public import DepotEngine

/// The predicate cases of the engine's fetch contract, shared by the
/// engine's tests (an SQLite store) and the backend contract tests (the
/// same cases on a PostgreSQL store), so that both backends answer the
/// same table.
public enum PredicateContract {
    /// Trip's columns in ``sampleTrips``: ``TestEntities/trip(values:)`` without `meta`.
    public static let tripColumns = [
        "id", "name", "destination", "startDate", "endDate", "budget", "isFavorite", "notes"
    ]

    /// Sorts, limits and offsets over ``sampleTrips``, with the ids in the
    /// order they give, worked out by hand: text sorts by its bytes
    /// ("ZURICH" before "Zürich" before "zurich"); nulls come first
    /// ascending and last descending unless asked otherwise.
    public static let orders: [(sort: [SortDescriptor], limit: Int?, offset: Int?, ids: [String])] = [
        ([SortDescriptor("budget", descending: true)], nil, nil, ["t5", "t1", "t6", "t2", "t3", "t4"]),
        ([SortDescriptor("destination"), SortDescriptor("id")], nil, nil, ["t4", "t1", "t5", "t3", "t2", "t6"]),
        (
            [SortDescriptor("destination", nulls: .last), SortDescriptor("id")], nil, nil,
            ["t1", "t5", "t3", "t2", "t6", "t4"]
        ),
        ([SortDescriptor("name")], nil, nil, ["t1", "t5", "t3", "t4", "t6", "t2"]),
        (
            [SortDescriptor("endDate", descending: true), SortDescriptor("id")], nil, nil,
            ["t5", "t1", "t2", "t3", "t4", "t6"]
        ),
        ([SortDescriptor("isFavorite"), SortDescriptor("budget")], nil, nil, ["t4", "t2", "t5", "t3", "t6", "t1"]),
        ([SortDescriptor("startDate")], 2, 1, ["t2", "t1"]),
        ([SortDescriptor("budget")], nil, 4, ["t1", "t5"]),
        ([SortDescriptor("budget")], 0, nil, [])
    ]

    public static let sampleTrips: [[Value]] = [
        ["t1", "Paris in spring", "Paris", "2025-04-01", "2025-04-08", 1500.0, true, "Louvre"],
        ["t2", "Zürich business", "Zürich", "2025-02-10", "2025-02-12", 900.0, false, nil],
        ["t3", "Rome weekend", "Rome", "2025-05-02", nil, 700.0, true, "Colosseum, \"Trevi\""],
        ["t4", "Test trip", nil, "2024-12-31", nil, 0.0, false, nil],
        ["t5", "Road trip", "Paris", "2025-07-14", "2025-07-30", 2500.5, false, "car"],
        ["t6", "ZURICH again", "zurich", "2026-01-05", nil, 1000.0, true, ""]
    ]

    /// Each predicate with the sample trips it selects, computed by hand from
    /// ``sampleTrips``.
    public static let cases: [(String, [String])] = [
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
        // Arithmetic and functions in NSExpression's syntax (DESIGN §17).
        ("budget * 2 > 2000", ["t1", "t5"]),
        ("(budget + 500) * 2 >= 3000", ["t1", "t5", "t6"]),
        ("budget - 1 < 0", ["t4"]),
        ("budget -1 < 0", ["t4"]),
        ("-budget < -2000", ["t5"]),
        ("budget / 2 == 450", ["t2"]),
        ("budget / 0 == nil", ["t1", "t2", "t3", "t4", "t5", "t6"]),
        ("budget > 100 * 10", ["t1", "t5"]),
        ("2000 < budget * 1", ["t5"]),
        ("TERNARY(isFavorite == true, budget, 0) > 800", ["t1", "t6"]),
        ("length:(destination) == 5", ["t1", "t5"]),
        ("uppercase:(destination) == 'PARIS'", ["t1", "t5"]),
        ("lowercase:(destination) == 'zurich'", ["t6"]),
        ("modulus:by:(length:(name), 2) == 0", ["t3", "t6"]),
        ("floor:(budget / 1000) == 1", ["t1", "t6"]),
        ("ceiling:(budget / 1000) == 3", ["t5"]),
        ("trunc:(-budget / 1000) == -1", ["t1", "t6"]),
        ("sqrt:(budget) > 30", ["t1", "t5", "t6"]),
        ("abs:(budget - 1000) < 200", ["t2", "t6"]),
        ("startDate < now()", ["t1", "t2", "t3", "t4", "t5", "t6"])
    ]

    /// Predicates that must be refused: the code, the 1-based position, and a
    /// fragment of the message.
    public static let errors: [(String, DepotError.Code, Int, String)] = [
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
        ("uppercase:(budget) == 'A'", .typeMismatch, 12, "uppercase: takes a string"),
        ("budget * 'a' > 1", .typeMismatch, 10, "* takes numbers"),
        ("frobnicate:(budget) > 1", .invalidPredicate, 1, "unknown function frobnicate:"),
        ("modulus:by:(budget) > 1", .invalidPredicate, 1, "takes 2 arguments"),
        ("TERNARY(isFavorite == true, name, budget) > 1", .typeMismatch, 1, "of one type"),
        ("(budget + 1 > 5", .invalidPredicate, 16, "expected \")\""),
        ("budget" + String(repeating: " + 1", count: 300) + " > 0", .invalidPredicate, 1004, "more than 250 operations")
    ]
}
