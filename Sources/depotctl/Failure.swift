import DepotClient
import Foundation

/// A failure depotctl reports on one line of stderr (exit status 1).
struct Failure: Error, CustomStringConvertible {
    var message: String
    /// For a predicate error: the predicate and the 1-based position to mark.
    var caret: (text: String, position: Int)?
    /// The daemon's error code, when the daemon answered with one.
    var code: String?
    /// For a save's conflict: each field another save changed since.
    var conflicts: [FieldConflict] = []

    init(_ message: String, code: String? = nil) {
        self.message = message
        self.code = code
    }

    var description: String { message }

    /// The client library's error: its message, code, and the predicate
    /// position to mark.
    init(_ error: DepotClientError) {
        self.init(error.message, code: error.code.rawValue)
        if let position = error.position { caret = ("", position) }
        conflicts = error.conflicts
    }
}
