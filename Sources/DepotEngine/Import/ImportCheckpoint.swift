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

    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    static func decode(_ bytes: [UInt8]) -> ImportCheckpoint? {
        try? JSONDecoder().decode(ImportCheckpoint.self, from: Data(bytes))
    }
}
