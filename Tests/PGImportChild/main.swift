// A host for the lease test (Tests/StoreContractTests/PostgreSQL/LeaseTests.swift): opens
// a PostgreSQL store of the tests' Trip entity, claims the next job as HOST
// under a lease of LEASE_MS (renewed while it runs), and runs the import its
// record describes, printing "claimed ID", then "save N" after each save so
// that the test can kill it with SIGKILL at a known point, and "done JSON"
// with the final counters.
//
// usage: PGImportChild URL SCHEMA HOST LEASE_MS
import ChildProcessSupport
import DepotEngine
import DepotPostgres
import Foundation

/// What the test queues: the import a job runs.
struct LeasedImport: Codable {
    var path: String
    var rejects: String
    var saveEvery: Int
}

let args = CommandLine.arguments
guard args.count == 5, let leaseMs = Int(args[4]) else {
    say("usage: PGImportChild URL SCHEMA HOST LEASE_MS")
    exit(64)
}
do {
    let trip = try TestEntities.trip()
    let location = try PostgresLocation(url: args[1], schema: args[2])
    // The store's host is the one claiming: a job's saves commit only
    // while that host holds it (PostgresStore.fence).
    var configuration = PostgresStoreConfiguration(name: "travel", location: location, entities: [trip])
    configuration.host = args[3]
    let store = try await PostgresStore.open(configuration)
    let host = args[3]
    let lease = Duration.milliseconds(leaseMs)
    guard let job = try await store.claimJob(host: host, lease: lease) else {
        say("nothing to claim")
        exit(2)
    }
    say("claimed \(job.id)")
    let spec = try JSONDecoder().decode(LeasedImport.self, from: Data(job.record.utf8))
    var options = ImportOptions(format: .csv, saveEvery: spec.saveEvery)
    options.saveInterval = .seconds(3600)
    options.maxRejects = .fraction(0.5)
    let request = ImportRequest(
        job: job.id, entity: "Trip", path: spec.path, rejectsPath: spec.rejects, options: options)
    let result = try await store.withLease(on: job.id, host: host, lease: lease) {
        try await Importer.run(request, into: store) { progress in say("save \(progress.saves)") }
    }
    try await store.finishJob(job.id, host: host, record: job.record, state: "done")
    var final = result
    final.elapsed = 0
    final.lastSaveSeconds = nil
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    say("done " + String(decoding: try encoder.encode(final), as: UTF8.self))
    await store.close()
} catch {
    say("error \(error)")
    exit(1)
}
