import DepotEngine
import Testing

@testable import DepotDaemon

/// The CSV cells of exports that embed related records (the others go
/// through the engine's RowEncoder, which ExportTests checks).
@Suite("CSV cells of exports")
struct CSVTextTests {
    @Test("a field is quoted when it holds a comma, a quote, CR or LF, a CRLF included")
    func quoting() {
        #expect(CSVText.field("plain") == "plain")
        #expect(CSVText.field("") == "\"\"")
        #expect(CSVText.field("a,b") == "\"a,b\"")
        #expect(CSVText.field("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSVText.field("one\ntwo") == "\"one\ntwo\"")
        // As Characters, "\r\n" is one grapheme, neither "\r" nor "\n".
        #expect(CSVText.field("one\r\ntwo") == "\"one\r\ntwo\"")
        #expect(CSVText.field("Zürich é\u{301}\"") == "\"Zürich é\u{301}\"\"\"")
        #expect(CSVText.field(Value.null) == "")
        #expect(CSVText.field(Value.double(2)) == "2.0")
    }
}
