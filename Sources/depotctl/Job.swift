import Foundation

/// A job as the daemon reports it.
struct Job: Decodable {
    var id: String
    var kind: String
    var store: String
    var entity: String?
    var state: String
    var author: String
    var created: String
    var started: String?
    var finished: String?
    var path: String?
    var format: String?
    var error: String?
    var rejects: String?
    var watchFile: String?
    var read = 0, inserted = 0, updated = 0, unchanged = 0, skipped = 0, duplicates = 0
    var rejected = 0, deleted = 0, exported = 0, saves = 0
    var bytesRead = 0, bytesTotal = 0
    var rate = 0.0
    var eta: Double?

    var isFinal: Bool { ["succeeded", "failed", "cancelled"].contains(state) }

    static func decode(_ text: String) throws -> Job {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(Job.self, from: Data(text.utf8))
        } catch {
            throw Failure("the daemon sent a job record depotctl cannot read: \(error)")
        }
    }

    /// What the job did, in one line.
    var summary: String {
        var parts: [String] = []
        switch kind {
        case "import":
            parts = [
                "\(Format.grouped(read)) read", "\(Format.grouped(inserted)) inserted",
                "\(Format.grouped(updated)) updated",
                "\(Format.grouped(unchanged)) unchanged"
            ]
            if skipped > 0 { parts.append("\(Format.grouped(skipped)) skipped") }
            if duplicates > 0 { parts.append("\(Format.grouped(duplicates)) repeated in the file") }
            parts.append("\(Format.grouped(rejected)) rejected")
        case "delete", "dedupe": parts = ["\(Format.grouped(deleted)) deleted"]
        case "update": parts = ["\(Format.grouped(updated)) updated", "\(Format.grouped(unchanged)) unchanged"]
        case "export": parts = ["\(Format.grouped(exported)) exported"]
        default: parts = ["\(Format.grouped(deleted)) pruned"]
        }
        return parts.joined(separator: ", ")
    }
}
