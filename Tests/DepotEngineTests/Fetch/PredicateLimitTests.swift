import Testing

@testable import DepotEngine

/// Predicates at and past the limits: long chains, deep nesting, many
/// values. Each is either answered correctly or refused as
/// `invalidPredicate` with a position; none reaches SQLite's own limits.
@Suite("Predicate limits")
struct PredicateLimitTests {
    static let all = ["t1", "t2", "t3", "t4", "t5", "t6"]

    func refusal(_ t: TemporaryStore, _ predicate: String) async -> DepotError? {
        await #expect(throws: DepotError.self) { try await t.ids(predicate) }
    }

    @Test("runs of NOT of any length fold: 50,000 '!' and 10,000 'NOT'")
    func longNegations() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let positive = try await t.ids("budget > 800")
        #expect(positive == ["t1", "t2", "t5", "t6"])
        #expect(try await t.ids(String(repeating: "!", count: 50_000) + "budget > 800") == positive)
        #expect(try await t.ids(String(repeating: "!", count: 50_001) + "budget > 800") == ["t3", "t4"])
        #expect(try await t.ids(String(repeating: "NOT ", count: 10_000) + "(budget > 800)") == positive)
        #expect(
            try await t.ids(
                String(repeating: "NOT (", count: 201) + "budget > 800"
                    + String(repeating: ")", count: 201)) == ["t3", "t4"])
    }

    @Test("parentheses nest up to 256 levels; the 257th is refused at its position")
    func parenthesisDepth() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let deepest = String(repeating: "(", count: 256) + "budget > 800" + String(repeating: ")", count: 256)
        #expect(try await t.ids(deepest) == ["t1", "t2", "t5", "t6"])
        let error = await refusal(
            t, String(repeating: "(", count: 50_000) + "budget > 1" + String(repeating: ")", count: 50_000))
        #expect(error?.code == .invalidPredicate)
        #expect(error?.position == 257)
        #expect(error?.message.contains("256 levels") == true)
    }

    @Test("a thousand and ten thousand OR'ed terms work, flat")
    func longOrChains() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        for count in [90, 1_000, 10_000] {
            let terms = (0..<count).map { #"id == "T\#($0)""# } + [#"id == "t3""#, #"id == "t5""#]
            #expect(try await t.ids(terms.joined(separator: " OR ")) == ["t3", "t5"], "\(count)")
            let and = (0..<count).map { _ in "budget > 800" }.joined(separator: " AND ")
            #expect(try await t.ids(and) == ["t1", "t2", "t5", "t6"], "\(count)")
        }
    }

    @Test("more values than SQLite binds are refused with a hint; a long IN list takes any number")
    func manyValues() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        let terms = Array(repeating: "budget > 1", count: 40_000).joined(separator: " AND ")
        let error = await refusal(t, terms)
        #expect(error?.code == .invalidPredicate)
        #expect(error?.message.contains("IN {") == true)
        // The 32,001st value, at 13 characters a term.
        #expect(error?.position == 32_000 * 15 + 10)
        let list = (0..<40_000).map { #""T\#($0)""# } + [#""t1""#, #""t3""#]
        #expect(try await t.ids("id IN {\(list.joined(separator: ", "))}") == ["t1", "t3"])
        #expect(try await t.ids("NOT id IN {\(list.joined(separator: ", "))}") == ["t2", "t4", "t5", "t6"])
        let cities = (0..<100).map { #""city \#($0)""# } + [#""ZURICH""#]
        #expect(try await t.ids("destination IN[cd] {\(cities.joined(separator: ", "))}") == ["t2", "t6"])
        let budgets = (0..<100).map { "\($0).5" } + ["700", "2500.5"]
        #expect(try await t.ids("budget IN {\(budgets.joined(separator: ", "))}") == ["t3", "t5"])
        let flags = Array(repeating: "true", count: 70)
        #expect(try await t.ids("isFavorite IN {\(flags.joined(separator: ", "))}") == ["t1", "t3", "t6"])
    }

    @Test("AND/OR nesting deeper than SQLite takes is refused at its position; the deepest accepted runs")
    func alternatingDepth() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        // (x OR (y AND (x OR (y AND …)))) with heavy leaves at the bottom.
        func nested(_ depth: Int) -> String {
            var text =
                #"NOT NOT destination IN[cd] {"# + (0..<80).map { #""c\#($0)""# }.joined(separator: ", ")
                + #", "rome"}"#
            for level in 0..<depth {
                text = level % 2 == 0 ? "(budget > 5000 OR \(text))" : "(isFavorite == true AND \(text))"
            }
            return text
        }
        var deepest = 0
        for depth in 1...60 {
            do {
                let ids = try await t.ids(nested(depth))
                #expect(ids == ["t3"], "depth \(depth)")
                // Inside the subquery of a paged count, too.
                let paged = FetchDescriptor(entity: "Trip", where: nested(depth), limit: 5, offset: 0)
                #expect(try await t.store.reader.count(paged) == 1)
                let stats = try await t.store.reader.aggregate(
                    AggregateRequest(
                        entity: "Trip", field: "budget", groupBy: ["destination"], where: nested(depth)))
                #expect(stats.rows.count == 1)
                deepest = depth
            } catch let error as DepotError {
                #expect(error.code == .invalidPredicate)
                #expect(error.message.contains("levels deep"), "\(error.message)")
                #expect((error.position ?? 0) > 1)
                break
            }
        }
        #expect(deepest >= 12)
        let error = await refusal(t, nested(200))
        #expect(error?.code == .invalidPredicate)
    }

    @Test("out-of-range numbers and over-long LIKE patterns are refused with their position")
    func outOfRange() async throws {
        let t = try await TemporaryStore()
        let huge = await refusal(t, "budget > 1e999")
        #expect(huge?.code == .invalidPredicate)
        #expect(huge?.position == 10)
        let pattern = await refusal(t, #"name LIKE ""# + String(repeating: "a*", count: 30_000) + #"""#)
        #expect(pattern?.code == .invalidPredicate)
        #expect(pattern?.position == 11)
        #expect(pattern?.message.contains("LIKE pattern") == true)
    }

    // MARK: - Against an oracle

    /// A predicate and how it evaluates on a sample trip in SQL's
    /// three-valued logic (`nil` is unknown).
    indirect enum Oracle: Sendable {
        case leaf(String, @Sendable ([Value]) -> Bool?)
        case and([Oracle])
        case or([Oracle])
        case not(Oracle)

        func evaluate(_ row: [Value]) -> Bool? {
            switch self {
            case .leaf(_, let f): return f(row)
            case .and(let terms):
                let values = terms.map { $0.evaluate(row) }
                if values.contains(false) { return false }
                return values.contains(nil) ? nil : true
            case .or(let terms):
                let values = terms.map { $0.evaluate(row) }
                if values.contains(true) { return true }
                return values.contains(nil) ? nil : false
            case .not(let e): return e.evaluate(row).map { !$0 }
            }
        }

        func text(_ rng: inout SplitMix) -> String {
            switch self {
            case .leaf(let text, _): return text
            case .and(let terms):
                return "(" + terms.map { $0.text(&rng) }.joined(separator: rng.next(2) == 0 ? " AND " : " && ") + ")"
            case .or(let terms):
                return "(" + terms.map { $0.text(&rng) }.joined(separator: rng.next(2) == 0 ? " OR " : " || ") + ")"
            case .not(let e): return (rng.next(2) == 0 ? "NOT " : "!") + e.text(&rng)
            }
        }
    }

    /// Columns of `TemporaryStore.tripColumns`: id, name, destination,
    /// startDate, endDate, budget, isFavorite, notes.
    static let leaves: [Oracle] = [
        .leaf("budget > 800") { if case .double(let b) = $0[5] { b > 800 } else { nil } },
        .leaf(#"destination == "Paris""#) { $0[2] == .null ? nil : $0[2] == "Paris" },
        .leaf("isFavorite == true") { $0[6] == .bool(true) },
        .leaf("notes == nil") { $0[7] == .null },
        .leaf(#"notes CONTAINS "o""#) { if case .string(let s) = $0[7] { s.contains("o") } else { nil } },
        .leaf(#"destination IN {"Rome", "zurich"}"#) { $0[2] == .null ? nil : ($0[2] == "Rome" || $0[2] == "zurich") },
        .leaf("endDate > startDate") {
            if case .string(let e) = $0[4], case .string(let s) = $0[3] { e > s } else { nil }
        },
        .leaf("TRUEPREDICATE") { _ in true },
        .leaf("FALSEPREDICATE") { _ in false }
    ]

    static func generate(_ rng: inout SplitMix, depth: Int) -> Oracle {
        if depth == 0 || rng.next(4) == 0 { return leaves[rng.next(leaves.count)] }
        switch rng.next(3) {
        case 0: return .not(generate(&rng, depth: depth - 1))
        case 1: return .and((0..<(2 + rng.next(4))).map { _ in generate(&rng, depth: depth - 1) })
        default: return .or((0..<(2 + rng.next(4))).map { _ in generate(&rng, depth: depth - 1) })
        }
    }

    @Test("2,000 random predicates select what three-valued logic says (NOT pushed down, chains flattened)")
    func againstOracle() async throws {
        let t = try await TemporaryStore()
        try await t.insertSample()
        var rng = SplitMix(seed: 0x5EED)
        for _ in 0..<2_000 {
            let oracle = Self.generate(&rng, depth: 6)
            let text = oracle.text(&rng)
            let expected = TemporaryStore.sampleTrips.filter { oracle.evaluate($0) == true }.map {
                guard case .string(let id) = $0[0] else { return "?" }
                return id
            }
            #expect(try await t.ids(text) == expected, "\(text)")
        }
    }
}

/// A small deterministic random number generator (SplitMix64).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
