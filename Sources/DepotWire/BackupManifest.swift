import Foundation

/// What a backup's manifest says of its copy (DESIGN §20), written beside
/// it as `NAME.json`: which store, at which token, when, by which
/// release, its records per entity, its size and its SHA-256.
///
/// ```json
/// {"store":"travel","file":"travel-20261129T081500Z.sqlite","token":"1042","time":"2026-11-29T08:15:00.120Z",
///  "depot_version":"0.9.0","system_version":9,"entities":{"Trip":1000000},"bytes":123904000,
///  "sha256":"9f8…","verified":true}
/// ```
public struct BackupManifest: Codable, Sendable, Hashable {
    /// The store copied.
    public var store: String
    /// The copy's file name, in the manifest's folder.
    public var file: String
    /// The token of the last commit the copy holds; nil for a store that
    /// never committed a change.
    public var token: String?
    /// When the copy's snapshot was taken (canonical UTC).
    public var time: String
    /// The release that wrote the copy.
    public var depotVersion: String
    /// The version of the engine's tables in the copy (the store's format).
    public var systemVersion: Int
    /// The records of each entity in the copy.
    public var entities: [String: Int]
    /// The copy's size.
    public var bytes: Int64
    /// The copy's SHA-256, in lowercase hex.
    public var sha256: String
    /// Whether the copy was checked after it was written (`--verify`):
    /// SQLite's integrity check and the counts read again from it.
    public var verified: Bool
    /// The job that wrote the copy, if a job did.
    public var job: String?

    public init(
        store: String, file: String, token: String?, time: String, depotVersion: String, systemVersion: Int,
        entities: [String: Int], bytes: Int64, sha256: String, verified: Bool, job: String? = nil
    ) {
        self.store = store
        self.file = file
        self.token = token
        self.time = time
        self.depotVersion = depotVersion
        self.systemVersion = systemVersion
        self.entities = entities
        self.bytes = bytes
        self.sha256 = sha256
        self.verified = verified
        self.job = job
    }

    enum CodingKeys: String, CodingKey {
        case store, file, token, time
        case depotVersion = "depot_version"
        case systemVersion = "system_version"
        case entities, bytes, sha256, verified, job
    }
}
