import Foundation

/// Where an import stands after a save: committed in the same transaction as
/// the save's records, so a restarted job resumes exactly there.
struct ImportCheckpoint: Codable, Sendable {
    var fingerprint: InputFingerprint
    /// The byte offset of the first record not yet saved.
    var offset: Int64
    /// The line on which that record starts.
    var line: Int
    /// The file offset where that line starts (JSON errors give columns);
    /// `nil` in checkpoints written before it was kept: then `offset`.
    var lineStart: Int64?
    /// The rejects file's length after the save.
    var rejectsLength: Int64
    /// The entity's greatest rowid when the job started: rows above it came
    /// from this job's input, so meeting one again is an in-file duplicate.
    var rowidFloor: Int64
    var progress: ImportProgress
    /// For a save that ended inside a sorted run (to let a waiting save
    /// have the writer): the rows of that run, which starts at `offset`,
    /// written already in its sorted order. The resumed job reads and sorts
    /// the run again and skips them. `nil` (or 0) at a place between runs;
    /// `nil` in checkpoints written before a save could end inside a run.
    var runWritten: Int?
    /// With `runWritten`: the records that run was read to hold, which the
    /// resumed job reads again; `nil` in checkpoints written before runs
    /// could be merged (their length follows from the options then).
    var runLength: Int?

    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    static func decode(_ bytes: [UInt8]) -> ImportCheckpoint? {
        try? JSONDecoder().decode(ImportCheckpoint.self, from: Data(bytes))
    }
}
