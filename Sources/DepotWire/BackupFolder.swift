import Foundation

/// The backups in a folder, read from their manifests (DESIGN §20): what
/// `depotctl backup list` prints, where `depotd restore --from FOLDER`
/// picks one, and what a store's schedule keeps or removes.
public enum BackupFolder {
    /// A manifest found in the folder, with its copy's path and what is
    /// wrong with the copy, if anything.
    public struct Entry: Sendable {
        public var manifest: BackupManifest
        /// The copy beside the manifest: the folder and the manifest's file name.
        public var path: String
        /// Why the copy cannot be restored as it is; nil when it can.
        public var problem: Problem?
    }

    /// What can be wrong with a copy, told by a look at its folder.
    public enum Problem: Sendable, Hashable, CustomStringConvertible {
        case missing
        /// The size found, where the manifest says another.
        case size(found: Int64, manifest: Int64)
        /// The manifest names a file elsewhere (a hand edit could): never read.
        case outsideFolder

        public var description: String {
            switch self {
            case .missing: "the copy is missing"
            case .size(let found, let manifest): "the copy holds \(found) bytes, its manifest says \(manifest)"
            case .outsideFolder: "the manifest names a file outside its folder"
            }
        }
    }

    /// The manifests in `folder`, newest first (by the snapshot's time, then
    /// the file's name); `store` keeps that store's. A file that is not a
    /// manifest is passed over.
    ///
    /// - Throws: ``CocoaError`` when the folder cannot be read.
    public static func entries(in folder: String, store: String? = nil) throws -> [Entry] {
        var found: [Entry] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) where name.hasSuffix(".json") {
            guard let data = FileManager.default.contents(atPath: folder + "/" + name),
                let manifest = try? JSONDecoder().decode(BackupManifest.self, from: data),
                store == nil || manifest.store == store
            else { continue }
            let path = folder + "/" + manifest.file
            var problem: Problem?
            if manifest.file.contains("/") || manifest.file == ".." || manifest.file == "." || manifest.file.isEmpty {
                problem = .outsideFolder
            } else {
                switch (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber {
                case nil: problem = .missing
                case let size? where size.int64Value != manifest.bytes:
                    problem = .size(found: size.int64Value, manifest: manifest.bytes)
                default: break
                }
            }
            found.append(Entry(manifest: manifest, path: path, problem: problem))
        }
        return found.sorted { ($0.manifest.time, $0.manifest.file) > ($1.manifest.time, $1.manifest.file) }
    }
}
