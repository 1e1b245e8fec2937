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
    /// Whether this chunk ends at a place in the input: false inside a
    /// sorted run (``SortedRun``), whose chunks hold records from all over
    /// the run, so that no place in the input lies between them.
    var boundary = true
    /// Inside a sorted run, the rows of the run's order handed out through
    /// this chunk: a save that ends after it keeps that count with the run's
    /// start in its checkpoint (``ImportCheckpoint/runWritten``).
    var runHandedOut = 0
    /// Inside a sorted run, the records the run was read to hold: a job
    /// resumed inside it reads the same run again
    /// (``ImportCheckpoint/runLength``).
    var runLength = 0
}
