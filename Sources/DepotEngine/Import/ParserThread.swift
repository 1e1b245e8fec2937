import Foundation

/// Reads the input chunk by chunk on a thread of its own, ahead of the saves.
///
/// With a sort order (``SortedRun``), it reads `runLength` records at a time,
/// sorts them by identifier and hands them out in chunks; while it reads the
/// next run, it hands out the previous one's chunks as the queue takes them,
/// so parsing and writing still overlap.
// @unchecked: its fields are used by its own thread only; the queue is how it hands out chunks.
final class ParserThread: @unchecked Sendable {
    // Safe: `batcher` is used only by the thread, after `start()`.
    private var batcher: any RecordBatcher
    private let queue: ChunkQueue
    private let chunk: Int
    private let identifier: [String]?
    private let runLength: Int
    private let firstRunLength: Int
    private let alreadyRead: Int
    /// Rows of the first run already written (a job resumed inside a run).
    private let firstRunWritten: Int
    /// The length of the run a resumed job stopped inside, which it reads
    /// again as it was (its checkpoint's); nil: as the lengths go.
    private let resumedRunLength: Int?
    /// Records of a run sorted in memory at a time (``MergedRun``).
    private let memoryRows: Int
    /// Where runs longer than `memoryRows` spill their sorted parts.
    private let spillFolder: String

    /// - Parameters:
    ///   - identifier: the fields to sort each run by; nil keeps the
    ///     input's order (and `runLength` is not used).
    ///   - firstRunLength: the length of the job's first run, when it is
    ///     shorter than the others (so that the first save need not wait
    ///     for a whole long run to be read); the next ones grow fourfold up
    ///     to `runLength` (``runLength(after:first:full:)``).
    ///   - alreadyRead: the records the job read before this start (its
    ///     checkpoint's), which is where one of its runs ended.
    ///   - firstRunWritten: the rows of the first run, in its sorted order,
    ///     that the job wrote before it stopped inside that run.
    ///   - resumedRunLength: the length of that run.
    ///   - memoryRows: records sorted in memory at a time; a longer run is
    ///     merged from sorted parts spilled to a file in `spillFolder`.
    init(
        batcher: any RecordBatcher, queue: ChunkQueue, chunk: Int, identifier: [String]? = nil, runLength: Int = 0,
        firstRunLength: Int? = nil, alreadyRead: Int = 0, firstRunWritten: Int = 0, resumedRunLength: Int? = nil,
        memoryRows: Int = .max, spillFolder: String = NSTemporaryDirectory()
    ) {
        self.batcher = batcher
        self.queue = queue
        self.chunk = chunk
        self.identifier = identifier
        self.runLength = runLength
        self.firstRunLength = min(firstRunLength ?? runLength, runLength)
        self.alreadyRead = alreadyRead
        self.firstRunWritten = firstRunWritten
        self.resumedRunLength = firstRunWritten > 0 ? resumedRunLength : nil
        self.memoryRows = memoryRows
        self.spillFolder = spillFolder
    }

    /// The length of the run that starts after `read` records of a job
    /// whose runs start at `first` records and grow fourfold to `full`: a
    /// job resumed where a run ended goes on as the clean run did.
    static func runLength(after read: Int, first: Int, full: Int) -> Int {
        var boundary = 0
        var length = max(1, first)
        while length < full {
            if boundary == read { return length }
            if boundary > read { return full }
            boundary += length
            length = min(full, length * 4)
        }
        return full
    }

    func start() {
        let thread = Thread { [self] in
            if identifier != nil, runLength > 1 { runSorted() } else { runInOrder() }
        }
        thread.name = "depot-import-parser"
        thread.start()
    }

    private func runInOrder() {
        while true {
            let item: Result<ParsedBatch, any Error>
            do {
                item = .success(try batcher.next(max: chunk))
            } catch {
                item = .failure(error)
            }
            guard queue.put(item) else { return }
            if case .success(let parsed) = item, !parsed.atEnd { continue }
            return
        }
    }

    private func runSorted() {
        // The previous run, being handed out; the next, being read.
        var out: MergedRun?
        var run: MergedRun?
        /// Hands out `out`'s chunks: all of them, or while the queue has room.
        /// False once the queue is closed.
        func handOut(waiting: Bool) throws -> Bool {
            while out?.hasMore == true {
                if waiting {
                    guard queue.put(.success(try out!.nextChunk(max: chunk))) else { return false }
                    continue
                }
                // Unpack a chunk only when the queue can take it.
                guard queue.hasRoom else { return true }
                guard queue.put(.success(try out!.nextChunk(max: chunk))) else { return false }
            }
            return true
        }
        var read = alreadyRead
        var written = firstRunWritten
        var length = resumedRunLength ?? Self.runLength(after: read, first: firstRunLength, full: runLength)
        do {
            while true {
                let parsed: ParsedBatch
                do {
                    // Runs hold exactly `length` records (the last one fewer),
                    // counted from the job's start or its checkpoint, which is
                    // where a run ended: a resumed job sorts as the clean run did.
                    parsed = try batcher.next(max: min(chunk, length - (run?.read ?? 0)))
                } catch {
                    // The run read so far would fail with its save anyway.
                    guard try handOut(waiting: true) else { return }
                    _ = queue.put(.failure(error))
                    return
                }
                // A batcher's columns are fixed (the header's, or the entity's
                // fields), so every chunk fits the run (SortedRun checks it).
                if run == nil {
                    run = MergedRun(
                        columns: parsed.batch.columns, identifier: identifier, length: length,
                        memoryRows: min(memoryRows, length),
                        folder: spillFolder)
                }
                try run!.append(parsed)
                guard try handOut(waiting: false) else { return }
                if run!.read >= length || parsed.atEnd {
                    // Sorted while the queue still holds the previous run's
                    // last chunks, so that the save does not wait for the sort.
                    var finished = run!
                    run = nil
                    try finished.sort()
                    try finished.skip(written)
                    written = 0
                    // After a short first run the runs grow fourfold up to
                    // `runLength`: each is read while the last one is written,
                    // and writing a record takes longer than reading it.
                    read += finished.read
                    length = Self.runLength(after: read, first: firstRunLength, full: runLength)
                    guard try handOut(waiting: true) else { return }
                    out = finished
                    if parsed.atEnd {
                        _ = try handOut(waiting: true)
                        return
                    }
                }
            }
        } catch {
            // The spill file could not be written or read (a full disk):
            // the save under way fails with it, and the job resumes from
            // its last save.
            _ = queue.put(.failure(error))
        }
    }
}
