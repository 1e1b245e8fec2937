import Testing

@testable import DepotEngine

@Suite("Values, dates and JSON text")
struct ValueTests {
    static let dates: [(String, String?)] = [
        ("2025-03-14", "2025-03-14"),
        ("2024-02-29", "2024-02-29"),
        ("2025-02-29", nil),
        ("2025-13-01", nil),
        ("2025-3-14", nil),
        ("2025-03-14T10:30:00+01:00", "2025-03-14T09:30:00.000Z"),
        ("2025-03-14T10:30:00Z", "2025-03-14T10:30:00.000Z"),
        ("2025-03-14t10:30:00z", "2025-03-14T10:30:00.000Z"),
        ("2025-03-14 10:30", "2025-03-14T10:30:00.000Z"),
        ("2025-03-14T10:30:00.5-02:30", "2025-03-14T13:00:00.500Z"),
        ("2025-03-14T10:30:00.123456Z", "2025-03-14T10:30:00.123Z"),
        ("2025-01-01T00:30:00+01:00", "2024-12-31T23:30:00.000Z"),
        ("2024-12-31T23:30:00-0100", "2025-01-01T00:30:00.000Z"),
        ("2025-03-14T24:00:00Z", nil),
        ("2025-03-14T10:30:00+01", nil),
        ("2025-03-14T", nil),
        ("yesterday", nil),
        ("", nil)
    ]

    @Test("ISO 8601 dates and date-times become canonical UTC text", arguments: dates)
    func canonicalDates(_ input: String, _ expected: String?) {
        #expect(DateValue.canonical(input) == expected)
    }

    @Test("canonical date-times sort as text in time order")
    func sortOrder() {
        let inputs = [
            "2025-03-14T10:00:00.5Z", "2025-03-14T10:00:00Z", "2025-03-14T09:59:59.999+00:00",
            "2025-03-14T11:00:00.001+01:00"
        ]
        let canonical = inputs.compactMap(DateValue.canonical)
        #expect(
            canonical.sorted() == [
                "2025-03-14T09:59:59.999Z", "2025-03-14T10:00:00.000Z",
                "2025-03-14T10:00:00.001Z", "2025-03-14T10:00:00.500Z"
            ])
    }

    @Test("JSON text escapes what JSON requires and nothing else")
    func jsonText() {
        #expect(JSONText.quoted("plain Zürich") == #""plain Zürich""#)
        #expect(JSONText.quoted("a\"b\\c\nd\te\u{01}") == #""a\"b\\c\nd\te\u0001""#)
        #expect(JSONText.number(1500) == "1500.0")
        #expect(JSONText.number(0.1) == "0.1")
        #expect(JSONText.number(.infinity) == "null")
    }

    @Test("identifiers round-trip through their JSON text")
    func identifiers() throws {
        let compound = Identifier([4, 1950, "Male", "0-4"])
        #expect(compound.json == #"[4,1950,"Male","0-4"]"#)
        #expect(try Identifier(json: compound.json, fieldCount: 4) == compound)
        let single = Identifier(["t \"1\""])
        #expect(try Identifier(json: single.json, fieldCount: 1) == single)
        #expect(try Identifier(json: "[1, 2.5, true, null]", fieldCount: 4).values == [1, 2.5, true, nil])
        #expect(throws: DepotError.self) { try Identifier(json: "[1,2]", fieldCount: 3) }
        #expect(throws: DepotError.self) { try Identifier(json: "\"open", fieldCount: 1) }
        #expect(try Identifier(json: #""\u00fc\ud83d\ude00""#, fieldCount: 1).values == ["ü😀"])
    }

    @Test("API values convert to a field's stored form or are refused")
    func conversion() throws {
        let date = Field(name: "d", type: .date)
        #expect(try ValueConversion.convert("2025-03-14T10:30:00+01:00", to: date) == "2025-03-14T09:30:00.000Z")
        #expect(try ValueConversion.convert(3, to: Field(name: "x", type: .double)) == .double(3))
        #expect(throws: DepotError.self) { try ValueConversion.convert("x", to: Field(name: "x", type: .int)) }
        #expect(throws: DepotError.self) { try ValueConversion.convert(nil, to: Field(name: "x", type: .int)) }
        #expect(try ValueConversion.convert(nil, to: Field(name: "x", type: .int, isOptional: true)) == .null)
    }
}

@Suite("JSON as bytes")
struct JSONBytesTests {
    @Test("JSONBytes writes what JSONText writes, escapes and numbers included")
    func sameAsText() {
        let values: [Value] = [
            .null, true, false, 0, -1, .int(Int64.min), .int(Int64.max), 1.5, -0.25, 1e300, 900,
            .double(.nan), "", "plain", "quote \" and \\ backslash", "line\nbreak\ttab\r",
            "\u{01}\u{1F}\u{08}\u{0C}", "Zürich ✈︎ 東京", "\u{7F}"
        ]
        for value in values {
            var text = ""
            JSONText.append(value, to: &text)
            var bytes: [UInt8] = []
            JSONBytes.append(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == text, "\(value)")
        }
        var raw: [UInt8] = []
        JSONBytes.append(.string(#"{"a":[1]}"#), rawJSON: true, to: &raw)
        #expect(String(decoding: raw, as: UTF8.self) == #"{"a":[1]}"#)
    }
}
