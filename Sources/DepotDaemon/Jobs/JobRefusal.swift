import DepotEngine

/// Why the job layer refuses a request: what a route answers with (an
/// ``APIError`` of the same meaning, ``APIError/answer(to:)``), without the
/// job layer knowing of HTTP.
package enum JobRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// The daemon is stopping and takes no new jobs.
    case stopping
    /// No store of that name (the names open, for a suggestion).
    case unknownStore(String, open: [String])
    /// No job of that id.
    case unknownJob(String)

    package var description: String {
        switch self {
        case .stopping: "the daemon is stopping and takes no new jobs"
        case .unknownStore(let name, let open):
            "no store is named \(JSONText.quoted(name))" + DepotError.suggestion(for: name, in: open)
        case .unknownJob(let id): "no job has id \(JSONText.quoted(id))"
        }
    }
}
