import Foundation

/// Reads an input batch by batch, converting records to an entity's fields.
protocol RecordBatcher {
    /// Where the first record starts (after a header), for a fresh job.
    var startOffset: Int64 { get }
    var startLine: Int { get }
    var startLineStart: Int64 { get }
    /// Reads up to `max` records (a chunk; the save decides when to commit).
    mutating func next(max: Int) throws -> ParsedBatch
}

/// A batch of parsed records and what it took from the input.
struct ParsedBatch: Sendable {
    var batch: RecordBatch
    /// The line of each row of `batch`.
    var lines: [Int]
    /// The rejects file lines of the records refused while parsing.
    var rejects: [RejectsFile.Entry]
    /// Records read, good or bad.
    var read: Int
    var endOffset: Int64
    var endLine: Int
    /// The file offset where `endLine` starts.
    var endLineStart: Int64
    var atEnd: Bool
    /// Whether a save may end after this chunk: false inside a sorted run
    /// (``SortedRun``), whose chunks hold records from all over the run, so
    /// that no place in the input lies between them.
    var boundary = true
}
