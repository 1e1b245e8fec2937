import Foundation
import Testing

@testable import DepotEngine

/// A save waits at most for a job's current save (DESIGN §16, issue 31):
/// an import whose saves would run far longer (here: one save for the
/// whole file) ends its save within about 2 s while a save waits, inside a
/// sorted run if need be (SortedImportTests: it resumes exactly there).
@Suite("Import yields to a waiting save")
struct ImportYieldTests {
    @Test("a save during a long import is served before the import ends; the import stays exactly once")
    func yields() async throws {
        let t = try await TemporaryStore(saveEvery: 10_000_000) { $0.saveInterval = .seconds(3_600) }
        var csv = "id,name,startDate,budget,isFavorite\n"
        for i in 0..<500_000 { csv += "r\(i),Trip \(i),2025-05-02,\(i % 1_000).5,false\n" }
        let path = t.folder.appendingPathComponent("big.csv").path
        try Data(csv.utf8).write(to: URL(fileURLWithPath: path))
        let request = ImportRequest(
            job: "big", entity: "Trip", path: path, rejectsPath: path + ".rejects",
            options: ImportOptions(format: .csv))
        let (started, reading) = AsyncStream<Void>.makeStream()
        let store = t.store
        let done = Task { () -> (ImportProgress, ContinuousClock.Instant) in
            let p = try await Importer.run(request, into: store) { _ in reading.yield() }
            return (p, ContinuousClock.now)
        }
        var events = started.makeAsyncIterator()
        // The first event comes as the import starts, the next a second
        // later: by then its (only, unless it yields) save is under way.
        _ = await events.next()
        _ = await events.next()
        let saved = try await store.save(
            ChangeSet([
                .init(
                    .insert, entity: "Trip",
                    record: ["id": "x1", "name": "X", "startDate": "2025-01-01", "budget": 1.0, "isFavorite": true])
            ]),
            author: "web")
        let savedAt = ContinuousClock.now
        let (progress, endedAt) = try await done.value
        // Served while the import still ran: its save ended early for it.
        #expect(savedAt < endedAt)
        #expect(progress.saves >= 2, "\(progress.saves) saves")
        #expect(progress.inserted == 500_000 && progress.read == 500_000)
        #expect(saved.token != nil)
        #expect(try await store.reader.count(FetchDescriptor(entity: "Trip")) == 500_001)
    }
}
