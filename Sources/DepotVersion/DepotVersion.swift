/// The version of Depot: of depotd, depotctl, DepotClient and the Debian
/// package (scripts/package-deb reads it from `depotd --version`). The one
/// place it is written.
///
/// ```swift
/// print(DepotVersion.current)     // "0.1.0"
/// ```
public enum DepotVersion {
    /// Semantic versioning: major.minor.patch.
    ///
    /// ```swift
    /// let major = DepotVersion.current.split(separator: ".").first
    /// ```
    public static let current = "0.1.0"
}
