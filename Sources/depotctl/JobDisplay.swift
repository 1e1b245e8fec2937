import DepotClient
import Foundation

extension Job {
    /// Whether the job has ended.
    var isFinal: Bool { state.isFinal }

    /// What the job did, for people: an import's counts, a delete's deletions, ...
    var summary: String {
        var parts: [String] = []
        switch kind {
        case "import":
            parts = [
                "\(Format.grouped(counters.read)) read", "\(Format.grouped(counters.inserted)) inserted",
                "\(Format.grouped(counters.updated)) updated",
                "\(Format.grouped(counters.unchanged)) unchanged"
            ]
            if counters.skipped > 0 { parts.append("\(Format.grouped(counters.skipped)) skipped") }
            if counters.duplicates > 0 { parts.append("\(Format.grouped(counters.duplicates)) repeated in the file") }
            parts.append("\(Format.grouped(counters.rejected)) rejected")
        case "delete", "dedupe": parts = ["\(Format.grouped(counters.deleted)) deleted"]
        case "update":
            parts = ["\(Format.grouped(counters.updated)) updated", "\(Format.grouped(counters.unchanged)) unchanged"]
            if counters.rejected > 0 { parts.append("\(Format.grouped(counters.rejected)) rejected") }
        case "revert":
            parts = [
                "\(Format.grouped(counters.inserted)) inserted again", "\(Format.grouped(counters.updated)) set back",
                "\(Format.grouped(counters.deleted)) deleted", "\(Format.grouped(counters.rejected)) changed since"
            ]
        case "export": parts = ["\(Format.grouped(counters.exported)) exported"]
        default: parts = ["\(Format.grouped(counters.deleted)) pruned"]
        }
        return parts.joined(separator: ", ")
    }
}

extension EntityInfo {
    /// The identifier's fields first, then the others, as tables show them.
    var columns: [String] { identifier + fields.map(\.name).filter { !identifier.contains($0) } }
}
