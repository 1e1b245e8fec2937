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

    init(request: ImportRequest, entity: EntitySchema, from state: ImportCheckpoint) throws {
        let delimiter = request.options.delimiter ?? (request.options.format == .tsv ? 9 : UInt8(ascii: ","))
        let header = try CSVReader(
            path: request.path, delimiter: delimiter,
            lenientQuotes: request.options.lenientQuotes)
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
        for i in 0..<header.fieldCount { names.append(header.string(i) ?? "") }
        var columns: [(Int, Field)] = []
        var references: [(input: Int, name: String, fields: [Field])] = []
        var unknown: [String] = []
        var seen: Set<String> = []
        for (i, name) in names.enumerated() {
            guard seen.insert(name).inserted else {
                throw DepotError(
                    .invalidArgument,
                    "the header of \(request.path) names column "
                        + "\(JSONText.quoted(name)) twice")
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
        for id in entity.identifier where !given.contains(id) {
            throw DepotError(
                .invalidArgument,
                "the header of \(request.path) has no column for identifier "
                    + "field \(JSONText.quoted(id)) of \(JSONText.quoted(entity.name))")
        }
        self.columns = columns
        self.references = references
        self.headerCount = names.count
        self.entity = entity
        if state.offset > header.offset {
            reader = try CSVReader(
                path: request.path, delimiter: delimiter, lenientQuotes: request.options.lenientQuotes,
                offset: state.offset, line: state.line)
        } else {
            reader = header
        }
    }

    /// Reads up to `max` records.
    mutating func next(max: Int) throws -> ParsedBatch {
        var batch = RecordBatch(
            entity: entity.name, columns: columns.map(\.field.name) + references.flatMap { $0.fields.map(\.name) },
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
                let parsed = reader.withBytes(input) { bytes -> Result<Value, FieldParser.Failure> in
                    do throws(FieldParser.Failure) {
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
            batch.append(row)
            lines.append(reader.line)
        }
        return ParsedBatch(
            batch: batch, lines: lines, rejects: rejects, read: read, endOffset: reader.offset,
            endLine: reader.resumeLine, endLineStart: reader.offset, atEnd: atEnd)
    }
}
