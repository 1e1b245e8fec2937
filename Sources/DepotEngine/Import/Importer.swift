/// Imports a file into an entity of a store: streaming, saving periodically,
/// resuming exactly after a crash.
///
/// Each save commits, in one transaction, a batch of records, their history
/// and the job's checkpoint (input fingerprint, byte offset, line, counters,
/// rejects file length). A job restarted under the same id resumes after its
/// last save, so after any number of kills the store, the history and the
/// counters equal one clean run's. While a batch is saved, the next one is
/// parsed, so the two cores work together.
///
/// For example:
///
/// ```swift
/// let request = ImportRequest(job: "j1", entity: "Trip", path: "trips.csv", rejectsPath: "j1.rejects.ndjson")
/// let result = try await Importer.run(request, into: store) { progress in
///     print(progress.read, progress.rate)
/// }
/// ```
public enum Importer {
    /// Runs (or resumes) an import to its end.
    ///
    /// - Parameter progress: called after every save with the counters so far.
    /// - Returns: the final counters.
    /// - Throws: ``DepotError`` when the file cannot be read, its header does
    ///   not fit the entity, its content changed since the job started, or the
    ///   rejects pass `maxRejects`; `CancellationError` when the task is
    ///   cancelled (after the current save). Saved records stay saved.
    public static func run(_ request: ImportRequest, into store: Store,
                           progress: (@Sendable (ImportProgress) -> Void)? = nil) async throws -> ImportProgress {
        let clock = ContinuousClock()
        let started = clock.now
        let entity = try store.reader.entity(request.entity)
        let options = request.options
        let saveEvery = max(1, options.saveEvery ?? store.configuration.saveEvery)
        let saveInterval = options.saveInterval ?? store.configuration.saveInterval
        let fingerprint = try InputFingerprint(path: request.path)

        var state: ImportCheckpoint
        if let bytes = try await store.checkpoint(job: request.job) {
            guard let saved = ImportCheckpoint.decode(bytes) else {
                throw DepotError(.database, "the checkpoint of job \(request.job) is unreadable")
            }
            guard saved.fingerprint == fingerprint else {
                throw DepotError(.invalidArgument, "the input \(request.path) changed since job \(request.job) "
                    + "started, so it cannot resume; import the new file as a new job")
            }
            if saved.progress.finished { return saved.progress }
            state = saved
        } else {
            var fresh = ImportProgress()
            fresh.bytesTotal = fingerprint.size
            state = ImportCheckpoint(fingerprint: fingerprint, offset: 0, line: 1, rejectsLength: 0, progress: fresh)
        }
        let rejects = try RejectsFile(path: request.rejectsPath, truncateTo: state.rejectsLength)
        var batcher = try CSVBatcher(request: request, entity: entity, from: state)
        if state.offset == 0 {
            state.offset = batcher.reader.offset
            state.line = batcher.reader.resumeLine
        }
        let policy = options.onConflict
        let job = request.job

        var parsed = try batcher.next(max: saveEvery, until: clock.now + saveInterval)
        while true {
            let current = parsed
            let before = state
            async let saved: ImportCheckpoint = store.save(author: request.author, job: job) { save in
                let counts = try save.write(current.batch, policy: policy)
                var lines = current.rejects
                for r in counts.rejected {
                    lines.append(RejectsFile.line(current.lines[r.row], field: r.field, reason: r.reason, value: nil))
                }
                try rejects.append(lines)
                var next = before
                next.offset = current.endOffset
                next.line = current.endLine
                next.rejectsLength = rejects.length
                next.progress.read += current.read
                next.progress.inserted += counts.inserted
                next.progress.updated += counts.updated
                next.progress.unchanged += counts.unchanged
                next.progress.skipped += counts.skipped
                next.progress.rejected += current.rejects.count + counts.rejected.count
                next.progress.bytesRead = current.endOffset
                next.progress.saves += 1
                next.progress.finished = current.atEnd
                try save.setCheckpoint(job: job, data: next.encoded())
                return next
            }.value
            // Parse the next batch while this one saves.
            let upcoming = current.atEnd ? nil : try batcher.next(max: saveEvery, until: clock.now + saveInterval)
            state = try await saved
            let elapsed = clock.now - started
            state.progress.elapsed = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            progress?(state.progress)
            if case .count(let limit) = options.maxRejects, state.progress.rejected > limit {
                throw tooManyRejects(state.progress, limit: "\(limit)", request: request)
            }
            guard let upcoming else { break }
            try Task.checkCancellation()
            parsed = upcoming
        }
        if case .fraction(let f) = options.maxRejects, state.progress.read > 0,
           Double(state.progress.rejected) > f * Double(state.progress.read) {
            throw tooManyRejects(state.progress, limit: "\(f * 100)% of \(state.progress.read)", request: request)
        }
        return state.progress
    }

    static func tooManyRejects(_ p: ImportProgress, limit: String, request: ImportRequest) -> DepotError {
        DepotError(.invalidArgument, "the import rejected \(p.rejected) records, more than max_rejects (\(limit)); "
            + "the records saved so far stay saved; see \(request.rejectsPath) for each record's line and reason")
    }
}

/// A batch of parsed records and what it took from the input.
struct ParsedBatch: Sendable {
    var batch: RecordBatch
    /// The line of each row of `batch`.
    var lines: [Int]
    /// The rejects file lines of the records refused while parsing.
    var rejects: [String]
    /// Records read, good or bad.
    var read: Int
    var endOffset: Int64
    var endLine: Int
    var atEnd: Bool
}

/// Reads CSV records and converts them to an entity's fields, batch by batch.
struct CSVBatcher {
    let reader: CSVReader
    private let columns: [(input: Int, field: Field)]
    private let headerCount: Int
    private let entity: EntitySchema

    init(request: ImportRequest, entity: EntitySchema, from state: ImportCheckpoint) throws {
        let delimiter = request.options.delimiter ?? (request.options.format == .tsv ? 9 : UInt8(ascii: ","))
        let header = try CSVReader(path: request.path, delimiter: delimiter,
                                   lenientQuotes: request.options.lenientQuotes)
        guard let first = try header.next() else {
            throw DepotError(.invalidArgument, "\(request.path) is empty: a CSV import needs a header row "
                + "naming the fields")
        }
        if case .malformed(let line, let reason) = first {
            throw DepotError(.invalidArgument, "the header row of \(request.path) (line \(line)) is not valid CSV: \(reason)")
        }
        var names: [String] = []
        for i in 0..<header.fieldCount { names.append(header.string(i) ?? "") }
        var columns: [(Int, Field)] = []
        var unknown: [String] = []
        var seen: Set<String> = []
        for (i, name) in names.enumerated() {
            guard seen.insert(name).inserted else {
                throw DepotError(.invalidArgument, "the header of \(request.path) names column "
                    + "\(JSONText.quoted(name)) twice")
            }
            if let p = entity.position(of: name) { columns.append((i, entity.fields[p])) } else { unknown.append(name) }
        }
        if !unknown.isEmpty && request.options.refuseUnknownColumns {
            throw DepotError(.unknownField, "the header of \(request.path) has columns that are not fields of "
                + "\(JSONText.quoted(entity.name)): " + unknown.map {
                    JSONText.quoted($0) + DepotError.suggestion(for: $0, in: entity.fields.map(\.name))
                }.joined(separator: ", "))
        }
        for id in entity.identifier where !names.contains(id) {
            throw DepotError(.invalidArgument, "the header of \(request.path) has no column for identifier "
                + "field \(JSONText.quoted(id)) of \(JSONText.quoted(entity.name))")
        }
        self.columns = columns
        self.headerCount = names.count
        self.entity = entity
        if state.offset > header.offset {
            reader = try CSVReader(path: request.path, delimiter: delimiter, lenientQuotes: request.options.lenientQuotes,
                                   offset: state.offset, line: state.line)
        } else {
            reader = header
        }
    }

    /// Reads up to `max` records, or until `deadline`.
    mutating func next(max: Int, until deadline: ContinuousClock.Instant) throws -> ParsedBatch {
        var batch = RecordBatch(entity: entity.name, columns: columns.map(\.field.name), reservingCapacity: max)
        var lines: [Int] = []
        lines.reserveCapacity(max)
        var rejects: [String] = []
        var read = 0
        var row: [Value] = []
        row.reserveCapacity(columns.count)
        var atEnd = false
        let clock = ContinuousClock()
        while batch.count + rejects.count < max {
            if read & 1023 == 1023, clock.now >= deadline { break }
            guard let item = try reader.next() else {
                atEnd = true
                break
            }
            read += 1
            switch item {
            case .malformed(let line, let reason):
                rejects.append(RejectsFile.line(line, field: nil, reason: reason, value: nil))
                continue
            case .record:
                break
            }
            guard reader.fieldCount == headerCount else {
                rejects.append(RejectsFile.line(reader.line, field: nil,
                    reason: "the record has \(reader.fieldCount) fields, the header has \(headerCount)", value: nil))
                continue
            }
            row.removeAll(keepingCapacity: true)
            var failure: String?
            for (input, field) in columns {
                if reader.isNull(input) {
                    if !field.isOptional {
                        failure = RejectsFile.line(reader.line, field: field.name,
                            reason: "required field \(JSONText.quoted(field.name)) is empty", value: nil)
                        break
                    }
                    row.append(.null)
                    continue
                }
                let parsed = reader.withBytes(input) { bytes -> Result<Value, FieldParser.Failure> in
                    do throws(FieldParser.Failure) { return .success(try FieldParser.parse(bytes, as: field.type)) }
                    catch { return .failure(error) }
                }
                switch parsed {
                case .success(let value):
                    row.append(value)
                case .failure(let error):
                    let value = reader.withBytes(input) { String(decoding: $0, as: UTF8.self) }
                    failure = RejectsFile.line(reader.line, field: field.name,
                        reason: "field \(JSONText.quoted(field.name)) is \(field.type.rawValue), but the value "
                            + error.reason, value: value)
                }
                if failure != nil { break }
            }
            if let failure {
                rejects.append(failure)
                continue
            }
            batch.append(row)
            lines.append(reader.line)
        }
        return ParsedBatch(batch: batch, lines: lines, rejects: rejects, read: read, endOffset: reader.offset,
                           endLine: reader.resumeLine, atEnd: atEnd)
    }
}
