import Foundation

/// The third-party conformance corpora copied into `Tests/DepotEngineTests/Fixtures`,
/// each with its PROVENANCE.md and license.
enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    static func files(in folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path(folder)).sorted()
    }
}
