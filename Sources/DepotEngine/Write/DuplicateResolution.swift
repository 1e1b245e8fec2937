/// Which record of a duplicate group stays.
public enum DuplicateResolution: String, Sendable, Hashable, Codable {
    /// The record stored first.
    case keepFirst = "keep-first"
    /// The record stored last.
    case keepLast = "keep-last"
}
