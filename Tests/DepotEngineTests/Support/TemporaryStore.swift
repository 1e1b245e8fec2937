import ChildProcessSupport
import DepotEngine
import Foundation

/// A store in a fresh temporary folder, removed when the test ends.
final class TemporaryStore: Sendable {
    let folder: URL
    let store: Store
    var path: String { folder.appendingPathComponent("test.sqlite").path }

    /// The Trip entity of the design's example configuration.
    static func tripEntity(
        extraFields: [Field] = [], indexes: [[String]] = [["destination"], ["startDate"]],
        history: HistoryDetail = .fields
    ) throws -> EntitySchema {
        try EntitySchema(
            name: "Trip",
            fields: [
                Field(name: "id", type: .string),
                Field(name: "name", type: .string),
                Field(name: "destination", type: .string, isOptional: true),
                Field(name: "startDate", type: .date),
                Field(name: "endDate", type: .date, isOptional: true),
                Field(name: "budget", type: .double),
                Field(name: "isFavorite", type: .bool),
                Field(name: "notes", type: .string, isOptional: true)
            ] + extraFields,
            identifier: ["id"], indexes: indexes, preserveOnDelete: ["name"], history: history)
    }

    static func makeFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("depot-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    init(
        entities: [EntitySchema]? = nil, saveEvery: Int = 50_000, folder: URL? = nil,
        configure: (inout StoreConfiguration) -> Void = { _ in }
    ) async throws {
        self.folder = try folder ?? Self.makeFolder()
        var config = StoreConfiguration(
            name: "travel", path: self.folder.appendingPathComponent("test.sqlite").path,
            entities: try entities ?? [Self.tripEntity()], saveEvery: saveEvery)
        configure(&config)
        store = try await Store.open(config)
    }

    deinit {
        try? FileManager.default.removeItem(at: folder)
    }

    /// Upserts `rows` of Trip with every field given, in one save.
    @discardableResult
    func insertTrips(
        _ rows: [[Value]], policy: ConflictPolicy = .upsert, author: String = "test",
        job: String? = nil
    ) async throws -> SaveOutcome<WriteCounts> {
        var batch = RecordBatch(entity: "Trip", columns: Self.tripColumns)
        for row in rows { batch.append(row) }
        let frozen = batch
        return try await store.save(author: author, job: job) { try $0.write(frozen, policy: policy) }
    }

    static let tripColumns = ["id", "name", "destination", "startDate", "endDate", "budget", "isFavorite", "notes"]

    /// A small, hand-checked data set used by the fetch and predicate tests.
    static let sampleTrips = PredicateContract.sampleTrips

    func insertSample() async throws {
        try await insertTrips(Self.sampleTrips)
    }

    /// The ids of the trips matching `predicate`, sorted.
    func ids(_ predicate: String, arguments: [String: Value] = [:]) async throws -> [String] {
        let ids = try await store.reader.identifiers(
            FetchDescriptor(entity: "Trip", where: predicate, arguments: arguments, sort: [SortDescriptor("id")]))
        return ids.map { id in
            guard case .string(let s) = id.values[0] else { return "?" }
            return s
        }
    }
}

/// Runs `sqlite3` on a store file and returns its output, for checks that
/// look at the file as other tools see it.
func sqlite3(_ path: String, _ sql: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = [path, sql]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitForExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
