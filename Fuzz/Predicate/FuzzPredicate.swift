// Built for testing only: in a debug build (the suite replays the kept
// inputs through it) or by scripts/fuzz (-enable-testing -DFUZZING). A plain
// release build (`swift build -c release`, which builds every target) compiles
// it empty (DepotFuzz then says so), since @testable imports need modules compiled for testing:
// that is what made release builds of a fresh clone fail (issue #13).
#if DEBUG || FUZZING
@testable import DepotEngine
import Foundation
public import FuzzSupport

/// Predicates as a user may write them (up to 1 MB, nested or chained
/// without bound) must compile or be refused with a position inside the
/// text; a predicate that compiles must run in SQLite without a database
/// error. A trap, a stack overflow or a `database` error is a finding.
enum PredicateTarget {
    /// Trip with relationships (DESIGN §12), so that key paths are fuzzed
    /// too: a guide (to-one), stops (to-many, whose identifier holds the
    /// trip), the next trip (to-one to itself), and a guide's trips.
    static let entities = try! EntityDeclaration.resolve([
        EntityDeclaration(
            name: "Trip",
            fields: [
                Field(name: "id", type: .string), Field(name: "name", type: .string),
                Field(name: "destination", type: .string, isOptional: true), Field(name: "startDate", type: .date),
                Field(name: "endDate", type: .date, isOptional: true), Field(name: "budget", type: .double),
                Field(name: "isFavorite", type: .bool), Field(name: "notes", type: .string, isOptional: true),
                Field(name: "nights", type: .int, isOptional: true), Field(name: "extra", type: .json, isOptional: true)
            ],
            identifier: ["id"], indexes: [["destination"], ["startDate"]],
            relationships: [
                Relationship(name: "guide", target: "Guide", kind: .toOne(required: false)),
                Relationship(name: "next", target: "Trip", kind: .toOne(required: false)),
                Relationship(name: "stops", target: "Stop", kind: .toMany(inverse: "trip", delete: .cascade))
            ]),
        EntityDeclaration(
            name: "Guide", fields: [Field(name: "id", type: .int), Field(name: "name", type: .string)],
            identifier: ["id"],
            relationships: [
                Relationship(name: "trips", target: "Trip", kind: .toMany(inverse: "guide", delete: .nullify))
            ]),
        EntityDeclaration(
            name: "Stop",
            fields: [
                Field(name: "n", type: .int), Field(name: "city", type: .string),
                Field(name: "minutes", type: .int, isOptional: true)
            ],
            identifier: ["trip", "n"],
            relationships: [Relationship(name: "trip", target: "Trip", kind: .toOne(required: true))])
    ])
    static let entity = entities[0]
    static let schema = StoreSchema(name: "fuzz", entities: entities)

    static let store: Store = {
        let folder = Fuzz.temporaryFolder("predicate")
        return try! Fuzz.blocking {
            let store = try await Store.open(
                StoreConfiguration(name: "fuzz", path: folder + "/fuzz.sqlite", entities: entities))
            var guides = RecordBatch(entity: "Guide", columns: ["id", "name"])
            guides.append([1, "Ana"])
            var batch = RecordBatch(entity: "Trip", columns: entity.fields.map(\.name))
            batch.append([
                "t1", "Paris in spring", "Paris", "2025-04-01", "2025-04-08", 1500.0, true, "Louvre", 7, "{\"a\":1}", 1,
                "t2"
            ])
            batch.append(["t2", "Zürich", nil, "2025-02-10", nil, 0.0, false, nil, nil, nil, nil, "t1"])
            var stops = RecordBatch(entity: "Stop", columns: ["trip", "n", "city", "minutes"])
            stops.append(["t1", 1, "Lyon", 30]); stops.append(["t1", 2, "Dijon", nil])
            let frozen = [guides, batch, stops]
            _ = try await store.save(author: "fuzz") { save in
                for b in frozen { _ = try save.write(b, policy: .upsert, deferReferences: true) }
            }
            return store
        }
    }()

    static let arguments: [String: Value] = [
        "s": "Paris", "n": 5, "d": 2.5, "b": true, "date": "2025-01-01", "nil": .null
    ]

    static func check(_ text: String) {
        let scalars = text.unicodeScalars.count
        do {
            _ = try PredicateCompiler.compile(text, entity: entity, schema: schema, arguments: arguments)
        } catch let error as DepotError {
            guard [.invalidPredicate, .unknownField, .typeMismatch].contains(error.code) else {
                Fuzz.fail("compile: unexpected code \(error.code): \(error.message)")
            }
            guard let p = error.position, p >= 1, p <= scalars + 1 else {
                Fuzz.fail(
                    "compile: position \(String(describing: error.position)) outside 1...\(scalars + 1): \(error.message)"
                )
            }
            return
        } catch {
            Fuzz.fail("compile: not a DepotError: \(error)")
        }
        let descriptor = FetchDescriptor(entity: "Trip", where: text, arguments: arguments, limit: 3, offset: 0)
        do {
            _ = try Fuzz.blocking { try await store.reader.count(descriptor) }
            _ = try Fuzz.blocking { try await store.reader.identifiers(descriptor) }
        } catch let error as DepotError {
            Fuzz.fail("a predicate that compiled failed in SQLite (\(error.code)): \(error.message)")
        } catch {
            Fuzz.fail("run: \(error)")
        }
    }

    /// The same text as a value to compute (DESIGN §17): compiled or refused
    /// with a position inside it; computed, it runs without a database error.
    static func checkExpression(_ text: String) {
        let scalars = text.unicodeScalars.count
        do {
            _ = try PredicateCompiler.compute(
                [("x", text)], where: nil, entity: entity, schema: schema, arguments: arguments)
        } catch let error as DepotError {
            guard [.invalidPredicate, .unknownField, .typeMismatch].contains(error.code) else {
                Fuzz.fail("compute: unexpected code \(error.code): \(error.message)")
            }
            guard let p = error.position, p >= 1, p <= scalars + 1 else {
                Fuzz.fail(
                    "compute: position \(String(describing: error.position)) outside 1...\(scalars + 1): \(error.message)"
                )
            }
            return
        } catch {
            Fuzz.fail("compute: not a DepotError: \(error)")
        }
        var computed = FetchDescriptor(entity: "Trip", arguments: arguments, limit: 3, fields: ["id"])
        computed.computed = [ComputedField("x", text)]
        let descriptor = computed
        do {
            _ = try Fuzz.blocking { try await store.reader.fetchJSON(descriptor) }
        } catch let error as DepotError {
            Fuzz.fail("an expression that compiled failed in SQLite (\(error.code)): \(error.message)")
        } catch {
            Fuzz.fail("compute run: \(error)")
        }
    }
}

func fuzzPredicate(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    PredicateTarget.check(text)
    PredicateTarget.checkExpression(text)
    return 0
}

/// The target as `DepotFuzz FuzzPredicate` runs it.
public enum FuzzPredicateEntry {

    /// Deep nesting and long chains, up to about 1 MB: the class of input that overflowed the stack.
    public static let seeds: [[UInt8]] =
        ([
            Fuzz.repeated("!", 50_000) + "budget > 1",
            Fuzz.repeated("(", 50_000) + "budget > 1" + Fuzz.repeated(")", 50_000),
            Fuzz.repeated("(", 256) + "budget > 1" + Fuzz.repeated(")", 256),
            Array(repeating: "budget > 1", count: 40_000).joined(separator: " AND "),
            (0..<10_000).map { #"id == "T\#($0)""# }.joined(separator: " OR "),
            Fuzz.repeated("NOT ", 10_000) + "budget > 1",
            Fuzz.repeated("NOT (", 300) + "budget > 1" + Fuzz.repeated(")", 300),
            alternating(300),
            "id IN {" + (0..<40_000).map { #""T\#($0)""# }.joined(separator: ", ") + "}",
            #"name LIKE ""# + Fuzz.repeated("a*", 30_000) + #"""#,
            #"name CONTAINS[cd] "zürich" AND startDate >= $date AND nights BETWEEN {1, $n} OR extra == nil"#,
            #"`name` ENDSWITH[c] "\u00e9" || destination IN[cd] {"Paris", $s} && !(isFavorite == $b)"#,
            "budget > 1e999", "budget > 99999999999999999999", "nights == -9223372036854775808",
            // Key paths (DESIGN §12): long chains, nested subqueries and quantifiers.
            Array(repeating: "next", count: 40_000).joined(separator: ".") + ".name == 'x'",
            Array(repeating: "next", count: 20).joined(separator: ".") + ".guide.trips.@count > 0",
            Fuzz.repeated("SUBQUERY(stops, $s, ", 300) + "$s.minutes > 1" + Fuzz.repeated(").@count > 0", 300),
            Fuzz.repeated("ANY stops.trip.next.", 50) + "name == 'x'",
            (0..<2_000).map { "ANY stops.minutes > \($0)" }.joined(separator: " OR "),
            (0..<500).map { "SUBQUERY(stops, $s\($0), $s\($0).city == 'Lyon' AND guide.name == $s).@count > 0" }.joined(
                separator: " AND "),
            "ALL stops.minutes > 1 AND NONE stops.city IN {'Lyon'} AND stops.@sum.minutes > 1 AND stops.@avg.n < 2",
            "guide.trips.stops.@max.minutes == next.stops.@min.minutes",
            // Values to compute (DESIGN §17).
            "budget * 1.1 + nights / 2 - abs:(-3)", "TERNARY(nights > 2, uppercase:(name), lowercase:(notes))",
            "modulus:by:(nights, 0) + length:(guide.name) + stops.@sum.minutes",
            "9223372036854775807 + nights", "abs:(-9223372036854775807 - nights - 1)",
            Fuzz.repeated("abs:(", 10_000) + "budget" + Fuzz.repeated(")", 10_000),
            Array(repeating: "budget", count: 40_000).joined(separator: " * "),
            Fuzz.repeated("-", 50_000) + "budget", "sqrt:(budget) * now()", "floor:(ceiling:(trunc:($d)))"
        ] as [String]).map { Array($0.utf8) }
    /// `(id == 'x' OR (budget > 0 AND (…)))`, `depth` levels deep.
    static func alternating(_ depth: Int) -> String {
        var text = "budget > 1"
        for level in 0..<depth {
            text = level % 2 == 0 ? "(id == 'x' OR " + text + ")" : "(budget > 0 AND " + text + ")"
        }
        return text
    }

    public static let body: Fuzz.Body = fuzzPredicate
}

#endif
