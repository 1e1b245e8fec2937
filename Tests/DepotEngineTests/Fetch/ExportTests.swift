import DepotEngine
import Foundation
import Synchronization
import Testing

@Suite("Export: rows written straight from SQLite")
struct ExportTests {
    static func entity() throws -> EntitySchema {
        try EntitySchema(
            name: "Item",
            fields: [
                Field(name: "id", type: .string),
                Field(name: "text", type: .string, isOptional: true),
                Field(name: "count", type: .int, isOptional: true),
                Field(name: "amount", type: .double, isOptional: true),
                Field(name: "flag", type: .bool, isOptional: true),
                Field(name: "day", type: .date, isOptional: true),
                Field(name: "extra", type: .json, isOptional: true)
            ],
            identifier: ["id"])
    }

    /// Every kind of value the encoder treats apart: CSV's quoting (comma,
    /// quote, LF, CRLF, the empty string against null), JSON's escapes
    /// (control characters, backslash), text past ASCII, integers at their
    /// limits, doubles whole and not, huge and tiny, negative zero.
    static let rows: [[Value]] = [
        ["a", "plain", 1, 1.5, true, "2025-01-02", #"{"k":[1,2,"x"]}"#],
        ["b", "", 0, 0.0, false, nil, nil],
        ["c", nil, nil, nil, nil, nil, nil],
        ["d", "comma, inside", .int(Int64.max), 1e300, true, "2025-01-02T03:04:05.000Z", "[]"],
        ["e", "a \"quote\"", .int(Int64.min), -0.0, false, nil, "null"],
        ["f", "line\nbreak", -42, 123_456_789_012_345.0, nil, nil, "\"s\""],
        ["g", "crlf\r\ninside", 10, 1e15, nil, nil, "3.25"],
        ["h", "tab\there \u{1}\u{8}\u{c}\u{1f} back\\slash", 7, 0.1, nil, nil, nil],
        ["i", "Zürich 🎉 ünïcödé", -1, -2.5e-10, nil, nil, nil],
        ["j", "\"", 3, 4.0, nil, nil, nil],
        ["k", " spaces ", 5, -1234.5678, nil, nil, nil]
    ]

    func store() async throws -> TemporaryStore {
        let t = try await TemporaryStore(entities: [try Self.entity()])
        var batch = RecordBatch(entity: "Item", columns: ["id", "text", "count", "amount", "flag", "day", "extra"])
        for row in Self.rows { batch.append(row) }
        let frozen = batch
        _ = try await t.store.save(author: "test") { try $0.write(frozen, policy: .upsert) }
        return t
    }

    func export(
        _ t: TemporaryStore, _ descriptor: FetchDescriptor, _ format: RecordFormat,
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> (String, Int) {
        let out = Mutex<[UInt8]>([])
        let n = try await t.store.reader.export(
            descriptor, as: format,
            write: { bytes in
                out.withLock { $0.append(contentsOf: bytes) }
            }, progress: progress)
        return (out.withLock { String(decoding: $0, as: UTF8.self) }, n)
    }

    @Test("NDJSON lines are the fetch's JSON objects, byte for byte")
    func ndjsonMatchesFetch() async throws {
        let t = try await store()
        let records = try await t.store.reader.fetch(FetchDescriptor(entity: "Item"))
        let (text, n) = try await export(t, FetchDescriptor(entity: "Item"), .ndjson)
        #expect(n == Self.rows.count)
        #expect(text == (0..<records.count).map { records.jsonObject(row: $0) + "\n" }.joined())
        // Fields chosen, and a predicate with a bound value.
        let some = FetchDescriptor(entity: "Item", where: "count > $min", arguments: ["min": 2], fields: ["text", "id"])
        let chosen = try await t.store.reader.fetch(some)
        let (part, m) = try await export(t, some, .ndjson)
        #expect(m == 5 && chosen.count == 5)
        #expect(part == (0..<chosen.count).map { chosen.jsonObject(row: $0) + "\n" }.joined())
    }

    @Test("fetchJSON is the text of the fetch's jsonArray, for any sort, page, fields and predicate")
    func fetchJSONMatchesFetch() async throws {
        let t = try await store()
        let descriptors = [
            FetchDescriptor(entity: "Item"),
            FetchDescriptor(entity: "Item", sort: [.init("amount", descending: true)]),
            FetchDescriptor(entity: "Item", where: "text CONTAINS[c] 'e'", sort: [.init("count")], limit: 4, offset: 1),
            FetchDescriptor(entity: "Item", fields: ["extra", "flag", "id"]),
            FetchDescriptor(entity: "Item", where: "id == 'none'")
        ]
        for d in descriptors {
            let json = try await t.store.reader.fetchJSON(d)
            #expect(json == (try await t.store.reader.fetch(d)).jsonArray())
        }
        #expect(try await t.store.reader.fetchJSON(descriptors[4]) == "[]")
    }

    @Test("CSV reads back, through the importer, to the same records")
    func csvRoundTrip() async throws {
        let t = try await store()
        let (text, n) = try await export(t, FetchDescriptor(entity: "Item"), .csv)
        #expect(n == Self.rows.count)
        #expect(text.hasPrefix("id,text,count,amount,flag,day,extra\r\n"))
        #expect(text.contains("\r\nb,\"\",0,0.0,false,,\r\n"))
        #expect(text.contains("\r\nc,,,,,,\r\n"))
        #expect(text.contains("\r\ng,\"crlf\r\ninside\",10,1000000000000000.0,"))
        #expect(text.contains("\r\ne,\"a \"\"quote\"\"\",-9223372036854775808,0.0,false,,null\r\n"))
        let path = t.folder.appendingPathComponent("items.csv").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let copy = try await TemporaryStore(entities: [try Self.entity()])
        let result = try await Importer.run(
            ImportRequest(
                job: "rt", entity: "Item", path: path, rejectsPath: copy.folder.appendingPathComponent("r").path),
            into: copy.store)
        #expect(result.inserted == Self.rows.count && result.rejected == 0)
        let original = try await t.store.reader.fetch(FetchDescriptor(entity: "Item", sort: [.init("id")]))
        let back = try await copy.store.reader.fetch(FetchDescriptor(entity: "Item", sort: [.init("id")]))
        #expect(back.rows.count == original.rows.count)
        for (a, b) in zip(original.rows, back.rows) {
            // JSON comes back as the same JSON value; the rest as the same value.
            #expect(a.dropLast() == b.dropLast())
            #expect(a.last == b.last)
        }
    }

    @Test("an empty export is a header alone; progress counts up to the total")
    func emptyAndProgress() async throws {
        let t = try await store()
        let (text, n) = try await export(t, FetchDescriptor(entity: "Item", where: "id == 'none'"), .csv)
        #expect(n == 0 && text == "id,text,count,amount,flag,day,extra\r\n")
        let seen = Mutex<[Int]>([])
        _ = try await export(t, FetchDescriptor(entity: "Item"), .ndjson) { c in seen.withLock { $0.append(c) } }
        #expect(seen.withLock { $0.last } == Self.rows.count)
        await #expect(throws: DepotError.self) {
            _ = try await export(t, FetchDescriptor(entity: "Item", where: "nope > 1"), .csv)
        }
    }

    @Test("a write that fails ends the export with its error; the reader is free again")
    func writeFailure() async throws {
        let t = try await store()
        let full = DepotError(.invalidArgument, "cannot write x: No space left on device")
        await #expect(throws: full) {
            try await t.store.reader.export(FetchDescriptor(entity: "Item"), as: .csv, write: { _ in throw full })
        }
        #expect(try await t.store.reader.count(FetchDescriptor(entity: "Item")) == Self.rows.count)
    }

    @Test("a cancelled export stops with CancellationError")
    func cancellation() async throws {
        let t = try await store()
        let task = Task {
            try await t.store.reader.export(
                FetchDescriptor(entity: "Item"), as: .ndjson,
                write: { _ in
                    withUnsafeCurrentTask { $0?.cancel() }
                })
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
