/// Reads CSV records and converts them to an entity's fields, batch by batch.
struct CSVBatcher: RecordBatcher {
    let reader: CSVReader
    var startOffset: Int64 { reader.offset }
    var startLine: Int { reader.resumeLine }
    /// CSV errors name lines only: the line's start is not needed to resume.
    var startLineStart: Int64 { reader.offset }
    private let columns: [(input: Int, field: Field)]
    /// Columns named after a to-one to a compound identifier, each holding
    /// a JSON array of the identifier's values, and the fields they fill.
    private let references: [(input: Int, name: String, fields: [Field])]
    private let headerCount: Int
    private let entity: EntitySchema
    /// Spellings of null in fields that are not strings, and whether a
    /// quoted empty string is one.
    private let nulls: [[UInt8]]
    private let quotedEmptyIsNull: Bool
    private let latin1: Bool
    /// Whether the identifier `_key` is computed from each record's cells
    /// (an entity `depotctl infer` found no key for, DESIGN §18).
    private let computedKey: Bool
    private var scratch: [UInt8] = []

    init(request: ImportRequest, entity: EntitySchema, from state: ImportCheckpoint) throws {
        let options = request.options
        let delimiter = options.delimiter ?? (options.format == .tsv ? 9 : UInt8(ascii: ","))
        let quote = options.quote ?? UInt8(ascii: "\"")
        let header = try CSVReader(
            path: request.path, delimiter: delimiter, quote: quote, escape: options.escape,
            skipInitialSpace: options.skipInitialSpace,
            lenientQuotes: options.lenientQuotes)
        guard let first = try header.next() else {
            throw DepotError(
                .invalidArgument,
                "\(request.path) is empty: a CSV import needs a header row "
                    + "naming the fields")
        }
        if case .malformed(let line, let reason) = first {
            throw DepotError(
                .invalidArgument, "the header row of \(request.path) (line \(line)) is not valid CSV: \(reason)")
        }
        var names: [String] = []
        for i in 0..<header.fieldCount {
            if !options.header {
                names.append("field_\(i + 1)")
            } else if options.latin1 {
                names.append(header.withBytes(i) { String(decoding: Latin1.utf8($0), as: UTF8.self) })
            } else {
                names.append(header.string(i) ?? "")
            }
        }
        // Columns whose names are not their fields' (DESIGN §18).
        let columnNames = names
        names = names.map { options.columnFields[$0] ?? $0 }
        var columns: [(Int, Field)] = []
        var references: [(input: Int, name: String, fields: [Field])] = []
        var unknown: [String] = []
        var seen: Set<String> = []
        for (i, name) in names.enumerated() {
            guard seen.insert(name).inserted else {
                throw DepotError(
                    .invalidArgument,
                    "the header of \(request.path) names column "
                        + "\(JSONText.quoted(columnNames[i])) twice"
                        + (name != columnNames[i] ? " (as field \(JSONText.quoted(name)))" : ""))
            }
            if let p = entity.position(of: name) {
                columns.append((i, entity.fields[p]))
            } else if let names = entity.relationshipColumns[name], names.count > 1 {
                // A to-one to a compound identifier, as one JSON array (DESIGN §12).
                references.append((i, name, names.map { entity.fields[entity.position(of: $0)!] }))
            } else {
                unknown.append(name)
            }
        }
        if !unknown.isEmpty && request.options.refuseUnknownColumns {
            throw DepotError(
                .unknownField,
                "the header of \(request.path) has columns that are not fields of "
                    + "\(JSONText.quoted(entity.name)): "
                    + unknown.map {
                        JSONText.quoted($0) + DepotError.suggestion(for: $0, in: entity.fields.map(\.name))
                    }.joined(separator: ", "))
        }
        let given = Set(names + references.flatMap { $0.fields.map(\.name) })
        computedKey = entity.identifier == [Inference.computedKey] && !given.contains(Inference.computedKey)
        for id in entity.identifier where !given.contains(id) && !computedKey {
            throw DepotError(
                .invalidArgument,
                "the header of \(request.path) has no column for identifier "
                    + "field \(JSONText.quoted(id)) of \(JSONText.quoted(entity.name))")
        }
        self.columns = columns
        self.references = references
        self.headerCount = names.count
        self.entity = entity
        nulls = options.nulls.filter { $0 != "\"\"" && !$0.isEmpty }.map { Array($0.utf8) }
        quotedEmptyIsNull = options.nulls.contains("\"\"") || options.nulls.contains("")
        latin1 = options.latin1
        if state.offset > header.offset || (!options.header && state.offset == 0) {
            // Without a header, the first record is data: read it again.
            reader = try CSVReader(
                path: request.path, delimiter: delimiter, quote: quote, escape: options.escape,
                skipInitialSpace: options.skipInitialSpace,
                lenientQuotes: options.lenientQuotes, offset: state.offset, line: state.line)
        } else {
            reader = header
        }
    }

    /// Whether cell `input` is one of the import's null spellings.
    private func isNullSpelling(_ input: Int) -> Bool {
        reader.withBytes(input) { b in
            if b.isEmpty { return quotedEmptyIsNull }
            return nulls.contains { $0.count == b.count && $0.elementsEqual(b) }
        }
    }

    /// The computed `_key` of the record read: 128 bits of hash over every
    /// cell (its presence, length and bytes), as 32 hex digits; the same
    /// record gives the same key, so importing a file again changes nothing.
    private mutating func rowKey() -> String {
        scratch.removeAll(keepingCapacity: true)
        for i in 0..<reader.fieldCount {
            if reader.isNull(i) {
                scratch.append(0)
                continue
            }
            reader.withBytes(i) { b in
                scratch.append(1)
                withUnsafeBytes(of: UInt32(b.count).littleEndian) { scratch.append(contentsOf: $0) }
                scratch.append(contentsOf: b)
            }
        }
        return scratch.withUnsafeBufferPointer { Hashing.key128($0) }
    }

    /// Reads up to `max` records.
    mutating func next(max: Int) throws -> ParsedBatch {
        var batch = RecordBatch(
            entity: entity.name,
            columns: columns.map(\.field.name) + references.flatMap { $0.fields.map(\.name) }
                + (computedKey ? [Inference.computedKey] : []),
            reservingCapacity: max)
        var lines: [Int] = []
        lines.reserveCapacity(max)
        var rejects: [RejectsFile.Entry] = []
        var read = 0
        var row: [Value] = []
        row.reserveCapacity(columns.count)
        var atEnd = false
        while batch.count + rejects.count < max {
            guard let item = try reader.next() else {
                atEnd = true
                break
            }
            read += 1
            switch item {
            case .malformed(let line, let reason):
                rejects.append(.init(line: line, text: RejectsFile.line(line, field: nil, reason: reason, value: nil)))
                continue
            case .record:
                break
            }
            guard reader.fieldCount == headerCount else {
                rejects.append(
                    .init(
                        line: reader.line,
                        text: RejectsFile.line(
                            reader.line, field: nil,
                            reason: "the record has \(reader.fieldCount) fields, the header has \(headerCount)",
                            value: nil)))
                continue
            }
            row.removeAll(keepingCapacity: true)
            var failure: String?
            for (input, field) in columns {
                if reader.isNull(input) {
                    if !field.isOptional {
                        failure = RejectsFile.line(
                            reader.line, field: field.name,
                            reason: "required field \(JSONText.quoted(field.name)) is empty", value: nil)
                        break
                    }
                    row.append(.null)
                    continue
                }
                if field.type != .string, !nulls.isEmpty || quotedEmptyIsNull, isNullSpelling(input) {
                    if !field.isOptional {
                        failure = RejectsFile.line(
                            reader.line, field: field.name,
                            reason: "required field \(JSONText.quoted(field.name)) is null", value: nil)
                        break
                    }
                    row.append(.null)
                    continue
                }
                let parsed = reader.withBytes(input) { bytes -> Result<Value, FieldParser.Failure> in
                    do throws(FieldParser.Failure) {
                        if latin1, !Latin1.isASCII(bytes) {
                            let converted = Latin1.utf8(bytes).withUnsafeBufferPointer { b in
                                Result { () throws(FieldParser.Failure) -> Value in
                                    try FieldParser.parse(b, as: field.type)
                                }
                            }
                            return converted
                        }
                        return .success(try FieldParser.parse(bytes, as: field.type))
                    } catch { return .failure(error) }
                }
                switch parsed {
                case .success(let value):
                    row.append(value)
                case .failure(let error):
                    let value = reader.withBytes(input) { String(decoding: $0, as: UTF8.self) }
                    failure = RejectsFile.line(reader.line, field: field, failure: error, value: value)
                }
                if failure != nil { break }
            }
            if failure == nil {
                for (input, name, fields) in references {
                    if reader.isNull(input) {
                        if let f = fields.first(where: { !$0.isOptional }) {
                            failure = RejectsFile.line(
                                reader.line, field: name,
                                reason: "required field \(JSONText.quoted(f.name)) is empty", value: nil)
                            break
                        }
                        row += fields.map { _ in .null }
                        continue
                    }
                    let text = reader.withBytes(input) { String(decoding: $0, as: UTF8.self) }
                    do throws(FieldParser.Failure) {
                        row += try FieldParser.compoundReference(text, columns: fields)
                    } catch {
                        failure = RejectsFile.line(
                            reader.line, field: name, reason: "\(JSONText.quoted(name)) \(error.reason)",
                            value: text)
                        break
                    }
                }
            }
            if let failure {
                rejects.append(.init(line: reader.line, text: failure))
                continue
            }
            if computedKey { row.append(.string(rowKey())) }
            batch.append(row)
            lines.append(reader.line)
        }
        return ParsedBatch(
            batch: batch, lines: lines, rejects: rejects, read: read, endOffset: reader.offset,
            endLine: reader.resumeLine, endLineStart: reader.offset, atEnd: atEnd)
    }
}
