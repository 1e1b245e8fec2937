// Built for testing only, as every fuzz target (see Fuzz/CSV/FuzzCSV.swift).
#if DEBUG || FUZZING
@testable import DepotEngine
import Foundation
public import FuzzSupport

/// Any bytes inferred (DESIGN §18): either a clear refusal (a DepotError) or
/// an inference whose document is valid JSON, whose field names are valid
/// and unique without regard to case, the same twice, and whose identifier
/// candidates are exactly right: for a CSV, the unique never-null single
/// fields by brute force over the records the dialect reads, else only
/// unique combinations. A trap, a hang or a wrong key is a finding.
func fuzzInfer(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    // The first byte picks the name: CSV, NDJSON or JSON by extension.
    let name =
        size > 0 && data[0] == UInt8(ascii: "{")
        ? "f.ndjson" : size > 0 && data[0] == UInt8(ascii: "[") ? "f.json" : "f.csv"
    let path = Fuzz.scratchFile(name, data, size)
    var options = InferOptions(fileName: name)
    options.sampleBytes = 1 << 12
    let found: Inference
    do {
        found = try SchemaInference.infer(path: path, options: options)
    } catch let error as DepotError {
        if error.message.isEmpty { Fuzz.fail("a refusal without a reason") }
        return 0
    } catch {
        Fuzz.fail("infer threw what is not a DepotError: \(error)")
    }
    let json = found.json(toml: true)
    guard (try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil else {
        Fuzz.fail("the document is not JSON: \(json)")
    }
    var lowered = Set<String>()
    for f in found.fields {
        if f.name.isEmpty || f.name.utf8.contains(0) { Fuzz.fail("an invalid field name \(f.name.debugDescription)") }
        if !lowered.insert(f.name.lowercased()).inserted { Fuzz.fail("two fields named \(f.name) without case") }
    }
    do {
        let again = try SchemaInference.infer(path: path, options: options)
        let second = again.json(toml: true)
        if second != json { Fuzz.fail("inferred twice, differently:\n\(json)\n\(second)") }
    } catch {
        Fuzz.fail("a second inference threw: \(error)")
    }
    for key in found.identifierCandidates {
        for f in key {
            guard let field = found.fields.first(where: { $0.name == f }) else { Fuzz.fail("a candidate names \(f)") }
            if field.isOptional { Fuzz.fail("candidate field \(f) is optional") }
        }
    }
    guard let d = found.dialect else { return 0 }
    // Brute force over the records the dialect reads.
    var rows: [[[UInt8]?]] = []
    do {
        // As the inference and the import read it: its escape too (a
        // finding of 2026-11-29 read backslashes as text here, 9 records
        // where the inference counted 1).
        let reader = try CSVReader(
            path: path, delimiter: d.delimiter, quote: d.quote, escape: d.escape, skipInitialSpace: d.skipInitialSpace,
            lenientQuotes: true)
        var first = d.header
        var width = -1
        while let item = try reader.next() {
            guard case .record = item else { continue }
            if width < 0 { width = reader.fieldCount }
            if first {
                first = false
                continue
            }
            guard reader.fieldCount == width else { continue }
            // Null as the import reads it with the inferred entity: an empty
            // cell, or in a typed field a null spelling or a quoted "".
            rows.append(
                (0..<width).map { c in
                    if reader.isNull(c) { return nil }
                    return reader.withBytes(c) { b -> [UInt8]? in
                        let typed = c < found.fields.count && found.fields[c].type != .string
                        if typed && (b.isEmpty || NullSpelling.spelling(b) != nil) { return nil }
                        return Array(b)
                    }
                })
        }
    } catch {
        Fuzz.fail("the dialect's reader threw: \(error)")
    }
    if rows.count != found.rows { Fuzz.fail("\(found.rows) rows inferred, \(rows.count) read") }
    func unique(_ columns: [Int]) -> Bool {
        var seen = Set<[[UInt8]]>()
        for row in rows {
            var key: [[UInt8]] = []
            for c in columns {
                guard let v = row[c] else { return false }
                key.append(v)
            }
            if !seen.insert(key).inserted { return false }
        }
        return true
    }
    let index = Dictionary(uniqueKeysWithValues: found.fields.enumerated().map { ($1.name, $0) })
    let singles = Set((0..<found.fields.count).filter { unique([$0]) })
    let keys = found.identifierCandidates.map { $0.map { index[$0]! } }
    if !singles.isEmpty {
        if Set(keys.map { $0.sorted() }) != Set(singles.map { [$0] }) && keys.count < 10 {
            Fuzz.fail("candidates \(keys), unique singles \(singles.sorted())")
        }
    } else {
        for key in keys where key.count < 2 || !unique(key) { Fuzz.fail("candidate \(key) is not a unique key") }
    }
    return 0
}

/// The target as `DepotFuzz FuzzInfer` runs it.
public enum FuzzInferEntry {
    /// Wide, long, late-changing and ragged inputs.
    public static let seeds: [[UInt8]] = [
        "id,v\n" + (0..<20_000).map { "\($0),\($0 % 7)\n" }.joined() + "x,1.5\n",
        "a;b;c\n" + (0..<5_000).map { "\($0 % 100);\($0 / 100);NA\n" }.joined(),
        (0..<2_000).map { "{\"k\": \($0), \"s\": \"\($0 % 3)\", \"j\": [\($0)]}\n" }.joined(),
        "[" + (0..<2_000).map { "{\"k\": \($0)}" }.joined(separator: ",") + "]",
        Fuzz.repeated(",", 100_000) + "\n" + Fuzz.repeated(",", 100_000),
        "a,b\n1,2\n3\n4,5,6\n'x, y',\"z\"\n"
    ].map { Array($0.utf8) }
    public static let body: Fuzz.Body = fuzzInfer
}

#endif
