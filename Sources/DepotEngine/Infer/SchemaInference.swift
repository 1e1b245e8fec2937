import Foundation

/// What `depotctl infer` is asked (DESIGN §18).
public struct InferOptions: Sendable {
    /// The entity's name; `nil` makes one from ``fileName``.
    public var entity: String?
    /// The file's name as the user knows it (an upload's), for its format
    /// and the entity's name; `nil` uses the path's.
    public var fileName: String?
    /// The format; `nil` tells it from the name, else from the first byte.
    public var format: ImportOptions.Format?
    /// The memory the uniqueness check may hold before it spills to disk.
    public var memory = 24 << 20
    /// Where spilled runs go; `nil` is the system's temporary folder.
    public var temporaryFolder: String?
    /// The bytes the dialect is sniffed from.
    package var sampleBytes = 1 << 16

    public init(entity: String? = nil, fileName: String? = nil, format: ImportOptions.Format? = nil) {
        self.entity = entity
        self.fileName = fileName
        self.format = format
    }
}

/// Reads a whole file and infers the entity that holds it (DESIGN §18):
/// dialect, types with their evidence, nulls, identifier candidates. See
/// ``Inference``.
///
/// One pass reads the types, the nulls and which single fields are unique;
/// a further pass runs only to confirm a suspected repeat, or, when no
/// single field is unique, to try pairs, then triples. Memory stays flat:
/// the reader's buffer, one profile per column and the uniqueness
/// check's bounded buffers (``UniqueCandidate``).
public enum SchemaInference {
    /// Pairs and triples are tried among this many never-null columns, those
    /// with the most distinct values first.
    static let pairColumns = 8
    static let tripleColumns = 6

    public static func infer(path: String, options: InferOptions = InferOptions()) throws -> Inference {
        let name = options.fileName ?? URL(fileURLWithPath: path).lastPathComponent
        let head = try sample(path, bytes: options.sampleBytes)
        if head.bytes.isEmpty { throw DepotError(.invalidArgument, "\(name) is empty: there is nothing to infer from") }
        var encoding = "utf-8"
        var body = head.bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) {
            encoding = "utf-8-bom"
            body = body.dropFirst(3)
        }
        if body.starts(with: [0xFF, 0xFE]) || body.starts(with: [0xFE, 0xFF]) {
            throw DepotError(
                .invalidArgument, "\(name) is UTF-16 (it starts with a byte order mark of UTF-16); convert it to UTF-8")
        }
        if let zero = body.firstIndex(of: 0) {
            let line = body[..<zero].reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
            throw DepotError(
                .invalidArgument,
                "\(name) is not text: line \(line) holds a NUL byte (at byte \(zero + 1)); infer reads CSV, TSV, NDJSON and JSON"
            )
        }
        let firstByte = body.first { !JSONSyntax.isSpace($0) }
        var format = options.format ?? ImportOptions.Format(fileName: name)
        if format == nil || format == .json || format == .ndjson {
            if firstByte == UInt8(ascii: "[") {
                format = .json
            } else if firstByte == UInt8(ascii: "{") {
                format = .ndjson
            } else if format == .json || format == .ndjson {
                throw DepotError(
                    .invalidArgument, "\(name) is not JSON: it starts with neither { (NDJSON) nor [ (a JSON array)")
            } else {
                format = .csv
            }
        }
        let entityName = try options.entity ?? FieldNames.entity(from: name)
        var scan = Scan(path: path, name: name, encoding: encoding, options: options)
        switch format! {
        case .csv, .tsv:
            let complete = head.complete
            guard var dialect = DialectSniffer.sniff(Array(body), complete: complete) else {
                throw DepotError(.invalidArgument, "\(name) holds no record")
            }
            if format == .tsv && options.format == .tsv { dialect.delimiter = 0x09 }
            let rows = DialectSniffer.rows(
                Array(body), delimiter: dialect.delimiter, quote: dialect.quote, escape: dialect.escape,
                skipInitialSpace: dialect.skipInitialSpace, complete: complete)
            dialect.header = DialectSniffer.hasHeader(rows)
            try scan.csv(dialect)
            return try scan.result(
                format: dialect.delimiter == 0x09 ? .tsv : .csv, dialect: scan.dialect, entity: entityName)
        case .ndjson, .json:
            try scan.json()
            return try scan.result(format: format!, dialect: nil, entity: entityName)
        }
    }

    /// The most a sample grows to for a first line longer than
    /// `sampleBytes` (a header of thousands of columns).
    static let longestSample = 16 << 20

    /// The file's first `bytes` bytes, cut at the last line end when the
    /// file is longer; more, up to ``longestSample``, while they hold fewer
    /// than two line ends (issue 51: a header longer than the sample was
    /// "no record").
    static func sample(_ path: String, bytes: Int) throws -> (bytes: [UInt8], complete: Bool) {
        let file = try InputFile(path: path)
        var out: [UInt8] = []
        var want = bytes
        var ended = false
        while true {
            let filled = out.count
            out.append(contentsOf: repeatElement(0, count: want - filled))
            var at = filled
            while at < want {
                let n = try out.withUnsafeMutableBytes {
                    try file.read(into: $0.baseAddress! + at, count: want - at)
                }
                if n == 0 {
                    ended = true
                    break
                }
                at += n
            }
            out.removeSubrange(at...)
            if ended || Int64(out.count) >= file.size || want >= longestSample { break }
            // Two lines (a header and a row), ended by LF, or by CR alone.
            let newline: UInt8 = out.contains(0x0A) ? 0x0A : 0x0D
            if out.lazy.filter({ $0 == newline }).prefix(2).count >= 2 { break }
            want = min(want * 4, longestSample)
        }
        let complete = ended || Int64(out.count) >= file.size
        if !complete {
            guard let last = out.lastIndex(where: { $0 == 0x0A || $0 == 0x0D }), last > 0 else {
                throw DepotError(
                    .invalidArgument,
                    "the first line of the file is longer than \(longestSample >> 20) MiB: infer reads files "
                        + "whose lines are shorter")
            }
            out.removeSubrange((last + 1)...)
        }
        return (out, complete)
    }
}

/// One inference's passes over the file.
private struct Scan {
    let path: String
    let name: String
    var encoding: String
    let options: InferOptions
    var columns: [String] = []
    var profiles: [ColumnProfile] = []
    var rows = 0
    var problems: [Inference.Problem] = []
    var problemCount = 0
    var lineEnds = LineEnds()
    /// The header's line count (1 with a header), for the records' lines.
    var firstLine = 1
    var dialect: Dialect?
    var isJSON = false

    init(path: String, name: String, encoding: String, options: InferOptions) {
        self.path = path
        self.name = name
        self.encoding = encoding
        self.options = options
    }

    mutating func problem(_ line: Int, _ reason: String) {
        problemCount += 1
        if problems.count < 20 { problems.append(.init(line: line, reason: reason)) }
    }

    // MARK: CSV

    func reader(_ d: Dialect) throws -> CSVReader {
        try CSVReader(
            path: path, delimiter: d.delimiter, quote: d.quote, escape: d.escape, skipInitialSpace: d.skipInitialSpace,
            lenientQuotes: true)
    }

    /// The first pass: header, types, nulls, encoding, line ends; the
    /// single fields' uniqueness.
    mutating func csv(_ d: Dialect) throws {
        dialect = d
        let reader = try reader(d)
        var first = true
        var width = 0
        var candidates: [UniqueCandidate?] = []
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var headerBytes: [[UInt8]] = []
        var validUTF8 = true
        var lenient = false
        defer { dialect?.lenientQuotes = lenient }
        while let item = try reader.next() {
            if case .malformed(let line, let reason) = item {
                problem(line, reason)
                continue
            }
            if first {
                first = false
                width = reader.fieldCount
                if d.header {
                    headerBytes = (0..<width).map { c in reader.isNull(c) ? [] : reader.withBytes(c) { Array($0) } }
                    columns = (0..<width).map { reader.string($0) ?? "" }
                    if let c = columns.firstIndex(where: { $0.utf8.contains(0) }) {
                        throw DepotError(.invalidArgument, "\(name): the header's column \(c + 1) holds a NUL byte")
                    }
                    continue
                }
                columns = Array(repeating: "", count: width)
            }
            if profiles.isEmpty {
                profiles = Array(repeating: ColumnProfile(), count: width)
                let chunk = chunkSize(width)
                candidates = (0..<width).map { UniqueCandidate(columns: [$0], seed: 0, folder: folder, chunk: chunk) }
            }
            guard reader.fieldCount == width else {
                problem(
                    reader.line,
                    "the record has \(reader.fieldCount) fields, the \(d.header ? "header" : "first record") has \(width)"
                )
                continue
            }
            rows += 1
            let line = reader.line
            for c in 0..<width {
                if reader.isNull(c) {
                    profiles[c].addNull()
                    candidates[c] = nil
                    continue
                }
                try reader.withBytes(c) { b in
                    if validUTF8, !Latin1.isASCII(b) {
                        if String(validating: b, as: UTF8.self) == nil {
                            validUTF8 = false
                            encoding = "latin-1"
                        }
                    }
                    if b.contains(0) {
                        throw DepotError(
                            .invalidArgument, "\(name) is not text: line \(line) holds a NUL byte in column \(c + 1)")
                    }
                    if !lenient, !reader.isQuoted(c), b.contains(d.quote) { lenient = true }
                    profiles[c].add(b, quotedEmpty: b.isEmpty, line: line)
                    if let u = candidates[c] {
                        try u.add(Hashing.hash(b, seed: 0))
                        if u.stopped { candidates[c] = nil; stoppedSingles.append(u) }
                    }
                }
            }
        }
        // A header that is not UTF-8 makes the file Latin-1 too; the names
        // are then read as the import reads them (Latin-1 to UTF-8).
        if headerBytes.contains(where: { String(validating: $0, as: UTF8.self) == nil }) { encoding = "latin-1" }
        if encoding == "latin-1", !headerBytes.isEmpty {
            columns = headerBytes.map { b in
                b.withUnsafeBufferPointer { String(decoding: Latin1.utf8($0), as: UTF8.self) }
            }
        }
        if first { throw DepotError(.invalidArgument, "\(name) holds no record") }
        if profiles.isEmpty {
            throw DepotError(
                .invalidArgument,
                "\(name) has a header row and no records: there is nothing to infer the fields' types from")
        }
        if rows == 0 {
            let first = problems.first.map { " (line \($0.line): \($0.reason))" } ?? ""
            throw DepotError(
                .invalidArgument,
                "no record of \(name) fits its \(d.header ? "header" : "first record")\(first): "
                    + "there is nothing to infer the fields' types from")
        }
        lineEnds = try LineEnds.count(path)
        try keys(found: try finishSingles(candidates), folder: folder)
    }

    var stoppedSingles: [UniqueCandidate] = []

    /// Ends the first pass's singles: the unique ones; the others are suspects.
    mutating func finishSingles(_ candidates: [UniqueCandidate?]) throws -> [UniqueCandidate] {
        var unique: [UniqueCandidate] = []
        for case let u? in candidates {
            // A null spelling in a field that ends up typed is a null there.
            if profiles[u.columns[0]].isOptional { continue }
            if try u.finish() { unique.append(u) } else { stoppedSingles.append(u) }
        }
        return unique
    }
    /// The identifier candidates found: each the columns of a unique key.
    var uniqueKeys: [[Int]] = []

    func chunkSize(_ width: Int) -> Int { max(1 << 16, options.memory / 8 / max(width, 1)) }

    func temporaryFolder() throws -> URL {
        let base = URL(fileURLWithPath: options.temporaryFolder ?? NSTemporaryDirectory())
        let folder = base.appendingPathComponent("depot-infer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    // MARK: keys over further passes

    /// Confirms suspects and tries pairs and triples, a pass each, until the
    /// smallest unique candidates are known, each exactly.
    mutating func keys(found: [UniqueCandidate], folder: URL) throws {
        var unique = found
        var pending = stoppedSingles
        let ranked = found + stoppedSingles
        var level = 1
        // Each round is one pass (two after a hash collision, which 64-bit
        // hashes make all but impossible); three levels need at most six.
        for _ in 0..<12 {
            let smallest = unique.map(\.columns.count).min()
            // Suspects as small as a key found are verified too, so that the
            // list of candidates is exact; larger ones no longer matter.
            pending = pending.filter { smallest == nil || $0.columns.count <= smallest! }
            var fresh: [UniqueCandidate] = []
            if smallest == nil, level < 3 {
                level += 1
                fresh = combinations(level: level, ranked: ranked, folder: folder)
            }
            if pending.isEmpty && fresh.isEmpty { break }
            let suspects = pending
            try pass(verify: suspects, hash: fresh)
            pending = []
            for u in fresh {
                if try u.finish() { unique.append(u) } else { pending.append(u) }
            }
            // A suspect whose rows hold no equal values was a collision: it
            // is checked again with another seed.
            for s in suspects where !s.repeated {
                let again = UniqueCandidate(columns: s.columns, seed: s.seed &+ 1, folder: folder, chunk: chunkSize(1))
                try pass(verify: [], hash: [again])
                if try again.finish() { unique.append(again) } else { pending.append(again) }
            }
        }
        let smallest = unique.map(\.columns.count).min() ?? 0
        uniqueKeys = unique.filter { $0.columns.count == smallest }.map(\.columns)
    }

    /// Pairs or triples of never-null columns, the most distinct first.
    func combinations(level: Int, ranked: [UniqueCandidate], folder: URL) -> [UniqueCandidate] {
        let singles = ranked.filter { $0.columns.count == 1 }
        let order =
            singles
            .filter { profiles[$0.columns[0]].empties == 0 && profiles[$0.columns[0]].nulls.isEmpty }
            .sorted { $0.distinct > $1.distinct }
            .map { $0.columns[0] }
            .prefix(level == 2 ? SchemaInference.pairColumns : SchemaInference.tripleColumns)
        let cols = Array(order)
        var out: [[Int]] = []
        if level == 2 {
            for i in cols.indices { for j in cols.indices where j > i { out.append([cols[i], cols[j]].sorted()) } }
        } else {
            for i in cols.indices {
                for j in cols.indices where j > i {
                    for k in cols.indices where k > j { out.append([cols[i], cols[j], cols[k]].sorted()) }
                }
            }
        }
        let chunk = chunkSize(max(out.count, 1))
        return out.map { UniqueCandidate(columns: $0, seed: 0, folder: folder, chunk: chunk) }
    }

    /// One more pass: each suspect compares the values of the rows whose
    /// hash it suspects; each new candidate hashes every row.
    mutating func pass(verify suspects: [UniqueCandidate], hash fresh: [UniqueCandidate]) throws {
        let all = suspects + fresh
        guard !all.isEmpty else { return }
        let seeds = Set(all.map(\.seed))
        let width = columns.count
        var hashes: [UInt64: [UInt64]] = [:]
        for s in seeds { hashes[s] = Array(repeating: 0, count: width) }
        let used = Set(all.flatMap(\.columns))
        try eachRow { row in
            for s in seeds {
                for c in used { hashes[s]![c] = row.hash(c, seed: s) }
            }
            for u in all where !u.repeated {
                let h = hashes[u.seed]!.withUnsafeBufferPointer { u.combine($0) }
                if let suspect = u.suspect {
                    guard h == suspect else { continue }
                    let values = u.columns.map { row.bytes($0) }
                    if let kept = u.kept {
                        if kept == values { u.repeated = true }
                    } else {
                        u.kept = values
                    }
                } else {
                    try u.add(h)
                }
            }
        }
    }

    /// Calls `body` with each well-formed record after the header.
    func eachRow(_ body: (RowAccess) throws -> Void) throws {
        if isJSON {
            let reader = try JSONRecordReader(path: path)
            let access = RowAccess(json: reader, columns: columns)
            while let item = try reader.next() {
                guard case .record = item else { continue }
                access.mapMembers()
                try body(access)
            }
            return
        }
        let d = dialect!
        let reader = try reader(d)
        var first = d.header
        let access = RowAccess(csv: reader)
        while let item = try reader.next() {
            guard case .record = item else { continue }
            if first {
                first = false
                continue
            }
            guard reader.fieldCount == columns.count else { continue }
            try body(access)
        }
    }

    // MARK: JSON

    mutating func json() throws {
        isJSON = true
        let reader = try JSONRecordReader(path: path)
        var index: [String: Int] = [:]
        var candidates: [UniqueCandidate?] = []
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // The last record that named each column (0: none yet). A column a
        // record leaves out is null there; those nulls are counted when
        // the column is next seen, or at the end, not by a pass over every
        // column for each record: a file of 100,000 distinct keys made
        // that quadratic (issue 51: 49.5 s of CPU).
        var seen: [Int] = []
        func missing(_ c: Int, before row: Int) {
            let gap = row - 1 - seen[c]
            guard gap > 0 else { return }
            profiles[c].addNull(gap)
            // A member missing from a record is null there: no key.
            candidates[c] = nil
        }
        while let item = try reader.next() {
            if case .malformed(let line, let reason) = item {
                problem(line, reason)
                continue
            }
            rows += 1
            let line = reader.line
            for m in reader.members.indices {
                let key = reader.withKey(m) { String(decoding: $0, as: UTF8.self) }
                var c: Int
                if let known = index[key] {
                    c = known
                } else {
                    c = columns.count
                    index[key] = c
                    columns.append(key)
                    profiles.append(ColumnProfile())
                    candidates.append(
                        rows == 1 ? UniqueCandidate(columns: [c], seed: 0, folder: folder, chunk: 1 << 16) : nil)
                    seen.append(0)
                }
                if seen[c] == rows {
                    problem(line, "the record names \(JSONText.quoted(key)) twice; the last value counts")
                    continue
                }
                missing(c, before: rows)
                seen[c] = rows
                let kind = reader.members[m].kind
                try reader.withValue(m) { b in
                    profiles[c].add(json: kind, b, line: line)
                    if kind == .null {
                        candidates[c] = nil
                    } else if let u = candidates[c] {
                        try u.add(Hashing.hash(b, seed: 0))
                        if u.stopped {
                            candidates[c] = nil
                            stoppedSingles.append(u)
                        }
                    }
                }
            }
        }
        for c in seen.indices { missing(c, before: rows + 1) }
        if rows == 0 { throw DepotError(.invalidArgument, "\(name) holds no record") }
        lineEnds = try LineEnds.count(path)
        try keys(found: try finishSingles(candidates), folder: folder)
    }

    // MARK: result

    func result(format: ImportOptions.Format, dialect: Dialect?, entity: String) throws -> Inference {
        let names = FieldNames.make(columns)
        var fields: [Inference.InferredField] = []
        for (c, p) in profiles.enumerated() {
            fields.append(
                .init(
                    name: names[c], column: columns[c], type: p.type, isOptional: p.isOptional, nulls: p.nulls,
                    evidence: p.evidence.map { .init(type: $0.type, line: $0.line, value: $0.value) },
                    values: p.values))
        }
        var keys = uniqueKeys.map { $0.map { names[$0] } }
        keys.sort { rank($0, fields).lexicographicallyPrecedes(rank($1, fields)) }
        // Candidates are never null: an identifier field is required.
        for key in keys {
            for f in key { if let i = fields.firstIndex(where: { $0.name == f }) { fields[i].isOptional = false } }
        }
        return Inference(
            format: format, dialect: dialect, encoding: encoding, lineEnds: lineEnds.text, entity: entity,
            fields: fields, identifierCandidates: Array(keys.prefix(10)), rows: rows,
            problems: problems, problemCount: problemCount)
    }

    /// Orders candidates: fewer fields, then a name that says it is a key
    /// (`id`, `…_id`, `key`, `code`), then a type that makes a good key
    /// (int or string), then the file's order.
    func rank(_ key: [String], _ fields: [Inference.InferredField]) -> [Int] {
        var named = 0
        var typed = 0
        for f in key {
            let l = f.lowercased()
            if !(l == "id" || l.hasSuffix("id") || l.hasSuffix("key") || l.hasSuffix("code")) { named += 1 }
            if let field = fields.first(where: { $0.name == f }), field.type != .int, field.type != .string {
                typed += 1
            }
        }
        return [key.count, named, typed] + key.map { f in fields.firstIndex { $0.name == f } ?? 0 }
    }
}

/// A row of the file, whatever its format: a column's bytes and hash.
private final class RowAccess {
    private let csv: CSVReader?
    private let jsonReader: JSONRecordReader?
    private var index: [String: Int] = [:]
    /// For JSON: the member of each column, or -1.
    private var member: [Int] = []

    init(csv: CSVReader) {
        self.csv = csv
        jsonReader = nil
    }

    init(json: JSONRecordReader, columns: [String]) {
        csv = nil
        jsonReader = json
        for (c, name) in columns.enumerated() { index[name] = c }
        member = Array(repeating: -1, count: columns.count)
    }

    func mapMembers() {
        guard let r = jsonReader else { return }
        for c in member.indices { member[c] = -1 }
        for m in r.members.indices {
            let key = r.withKey(m) { String(decoding: $0, as: UTF8.self) }
            if let c = index[key] { member[c] = m }
        }
    }

    func hash(_ c: Int, seed: UInt64) -> UInt64 {
        if let csv { return csv.withBytes(c) { Hashing.hash($0, seed: seed) } }
        let m = member[c]
        guard m >= 0 else { return 0 }
        return jsonReader!.withValue(m) { Hashing.hash($0, seed: seed) }
    }

    func bytes(_ c: Int) -> [UInt8] {
        if let csv { return csv.withBytes(c) { Array($0) } }
        let m = member[c]
        guard m >= 0 else { return [] }
        return jsonReader!.withValue(m) { Array($0) }
    }
}

/// The line ends a file uses.
struct LineEnds {
    var lf = 0
    var crlf = 0
    var cr = 0

    var text: String {
        let kinds = [(lf, "lf"), (crlf, "crlf"), (cr, "cr")].filter { $0.0 > 0 }
        if kinds.isEmpty { return "none" }
        return kinds.count == 1 ? kinds[0].1 : "mixed"
    }

    /// Counts them in one read of the file (also inside quoted fields: a
    /// writer's line end is the same there).
    static func count(_ path: String) throws -> LineEnds {
        let file = try InputFile(path: path)
        var out = LineEnds()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var previousCR = false
        while true {
            let n = try buffer.withUnsafeMutableBytes { try file.read(into: $0.baseAddress!, count: $0.count) }
            if n == 0 { break }
            buffer.withUnsafeBufferPointer { b in
                for i in 0..<n {
                    let c = b[i]
                    if c == 0x0A {
                        if previousCR { out.crlf += 1; out.cr -= 1 } else { out.lf += 1 }
                        previousCR = false
                    } else if c == 0x0D {
                        out.cr += 1
                        previousCR = true
                    } else {
                        previousCR = false
                    }
                }
            }
        }
        return out
    }
}
