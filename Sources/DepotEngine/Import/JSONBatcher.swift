import Foundation

/// Reads JSON records (NDJSON or an array of objects) and converts them to an
/// entity's fields, batch by batch.
///
/// Every field of the entity is a column: a missing key is null, as `null`
/// is. Values convert by the field's type: a JSON string goes through the
/// same conversion as a CSV field (so `"42"` is a valid `int`), numbers and
/// booleans must fit the type, and a `json` field keeps any value as its JSON
/// text. Keys that are not fields are ignored, or reject the record when the
/// import refuses unknown columns.
struct JSONBatcher: RecordBatcher {
    let reader: JSONRecordReader
    private let entity: EntitySchema
    private let fieldNames: [[UInt8]]
    private let refuseUnknown: Bool
    /// The field each member position had last time: records usually list
    /// their keys in the same order, so one comparison finds the field.
    private var keyCache: [Int] = []
    /// To-ones to a compound identifier, given as one JSON array under their
    /// name (DESIGN §12): the name, and the positions of their columns.
    private let compound: [(name: String, fields: [Int])]
    /// The position of `_key` when it is computed from each record's
    /// members (an entity `depotctl infer` found no key for, DESIGN §18).
    private let computedKey: Int?
    private var scratch: [UInt8] = []

    var startOffset: Int64 { reader.offset }
    var startLine: Int { reader.resumeLine }
    var startLineStart: Int64 { reader.resumeLineStart }

    init(request: ImportRequest, entity: EntitySchema, from state: ImportCheckpoint) throws {
        reader = try JSONRecordReader(
            path: request.path, offset: state.offset, line: state.line,
            lineStart: state.lineStart)
        self.entity = entity
        // A field whose key is not its name (ImportOptions.columnFields).
        var keyOf: [String: String] = [:]
        for (column, field) in request.options.columnFields { keyOf[field] = column }
        fieldNames = entity.fields.map { Array((keyOf[$0.name] ?? $0.name).utf8) }
        computedKey =
            entity.identifier == [Inference.computedKey] ? entity.position(of: Inference.computedKey) : nil
        refuseUnknown = request.options.refuseUnknownColumns
        compound = entity.relationshipColumns.compactMap { name, columns in
            columns.count > 1 ? (name, columns.map { entity.position(of: $0)! }) : nil
        }
    }

    /// The compound to-one member `m` names, if any.
    private func compoundReference(ofMember m: Int) -> (name: String, fields: [Int])? {
        guard !compound.isEmpty else { return nil }
        let key = reader.withKey(m) { String(decoding: $0, as: UTF8.self) }
        return compound.first { $0.name == key }
    }

    private mutating func field(ofMember m: Int) -> Int? {
        reader.withKey(m) { key -> Int? in
            func matches(_ f: Int) -> Bool {
                let name = fieldNames[f]
                guard name.count == key.count, !key.isEmpty else { return false }
                return name.withUnsafeBufferPointer { memcmp($0.baseAddress!, key.baseAddress!, key.count) == 0 }
            }
            if m < keyCache.count, keyCache[m] >= 0, matches(keyCache[m]) { return keyCache[m] }
            for f in fieldNames.indices where matches(f) {
                while keyCache.count <= m { keyCache.append(-1) }
                keyCache[m] = f
                return f
            }
            return nil
        }
    }

    /// The computed `_key` of the record read: 128 bits of hash over its
    /// members (each key and value), as 32 hex digits.
    private mutating func recordKey() -> String {
        scratch.removeAll(keepingCapacity: true)
        for m in 0..<reader.members.count {
            for bytes in [reader.withKey(m) { Array($0) }, Array(reader.rawValue(m).utf8)] {
                withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { scratch.append(contentsOf: $0) }
                scratch.append(contentsOf: bytes)
            }
        }
        return scratch.withUnsafeBufferPointer { Hashing.key128($0) }
    }

    mutating func next(max: Int) throws -> ParsedBatch {
        let fields = entity.fields
        var batch = RecordBatch(entity: entity.name, columns: fields.map(\.name), reservingCapacity: max)
        var lines: [Int] = []
        lines.reserveCapacity(max)
        var rejects: [RejectsFile.Entry] = []
        var read = 0
        var row = [Value](repeating: .null, count: fields.count)
        var atEnd = false
        while batch.count + rejects.count < max {
            guard let item = try reader.next() else {
                atEnd = true
                break
            }
            read += 1
            // A chunk that holds the input's last item says so, so that its
            // save finishes the job: the reader's place after its end is not
            // one to resume at.
            if reader.isFinished { atEnd = true }
            if case .malformed(let line, let reason) = item {
                rejects.append(.init(line: line, text: RejectsFile.line(line, field: nil, reason: reason, value: nil)))
                if atEnd { break }
                continue
            }
            for k in row.indices { row[k] = .null }
            var failure: String?
            for m in 0..<reader.members.count {
                guard let f = field(ofMember: m) else {
                    if let (name, positions) = compoundReference(ofMember: m) {
                        if reader.members[m].kind == .null { continue }
                        do throws(FieldParser.Failure) {
                            let values = try FieldParser.compoundReference(
                                reader.rawValue(m), columns: positions.map { fields[$0] })
                            for (p, v) in zip(positions, values) { row[p] = v }
                        } catch {
                            failure = RejectsFile.line(
                                reader.line, field: name, reason: "\(JSONText.quoted(name)) \(error.reason)",
                                value: reader.rawValue(m))
                            break
                        }
                        continue
                    }
                    if refuseUnknown {
                        let name = reader.withKey(m) { String(decoding: $0, as: UTF8.self) }
                        failure = RejectsFile.line(
                            reader.line, field: name,
                            reason: "\(JSONText.quoted(name)) is not a field of \(JSONText.quoted(entity.name))"
                                + DepotError.suggestion(for: name, in: fields.map(\.name)), value: nil)
                        break
                    }
                    continue
                }
                switch convert(member: m, to: fields[f]) {
                case .success(let value):
                    row[f] = value
                case .failure(let error):
                    failure = RejectsFile.line(reader.line, field: fields[f], failure: error, value: reader.rawValue(m))
                }
                if failure != nil { break }
            }
            if failure == nil, let k = computedKey, row[k].isNull { row[k] = .string(recordKey()) }
            if failure == nil, let f = fields.indices.first(where: { row[$0].isNull && !fields[$0].isOptional }) {
                failure = RejectsFile.line(
                    reader.line, field: fields[f].name,
                    reason: "required field \(JSONText.quoted(fields[f].name)) is null or missing", value: nil)
            }
            if let failure {
                rejects.append(.init(line: reader.line, text: failure))
                if atEnd { break }
                continue
            }
            batch.append(row)
            lines.append(reader.line)
            if atEnd { break }
        }
        return ParsedBatch(
            batch: batch, lines: lines, rejects: rejects, read: read, endOffset: reader.offset,
            endLine: reader.resumeLine, endLineStart: reader.resumeLineStart, atEnd: atEnd)
    }

    private func convert(member m: Int, to field: Field) -> Result<Value, FieldParser.Failure> {
        let kind = reader.members[m].kind
        if kind == .null { return .success(.null) }
        if field.type == .json { return .success(.string(reader.rawValue(m))) }
        switch kind {
        case .string:
            return reader.withValue(m) { bytes in
                do throws(FieldParser.Failure) { return .success(try FieldParser.parse(bytes, as: field.type)) } catch {
                    return .failure(error)
                }
            }
        case .number:
            switch field.type {
            case .int, .double:
                return reader.withValue(m) { bytes in
                    do throws(FieldParser.Failure) {
                        return .success(try FieldParser.parse(bytes, as: field.type))
                    } catch { return .failure(error) }
                }
            case .string:
                return .success(.string(reader.rawValue(m)))
            default:
                return .failure(FieldParser.Failure(reason: "is a JSON number"))
            }
        case .true, .false:
            if field.type == .bool { return .success(.bool(kind == .true)) }
            return .failure(FieldParser.Failure(reason: "is a JSON boolean"))
        case .object:
            return .failure(FieldParser.Failure(reason: "is a JSON object"))
        case .array:
            return .failure(FieldParser.Failure(reason: "is a JSON array"))
        case .null:
            return .success(.null)
        }
    }
}
