public import Foundation

/// How the control API writes JSON: keys sorted, slashes as they are. The
/// daemon answers with it and depotctl's `--json` prints with it, so that
/// both write a wire value the same way.
///
/// ```swift
/// let line = try WireJSON.encoder.encode(job)
/// ```
public enum WireJSON {
    /// The encoder.
    ///
    /// ```swift
    /// let data = try WireJSON.encoder.encode(answer)
    /// ```
    public static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
}
