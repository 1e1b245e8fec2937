// The PostgreSQL import benchmark's Depot side (bench/pg-import): imports
// bench/gen.py's trips into DESIGN §8's Trip entity (its two indexes,
// history of values) of a PostgreSQL store through Importer (the store contract's import), the
// same reading as the daemon's imports (upsert, sorted runs, saves), and
// prints one line of figures.
import DepotEngine
import DepotWire
import DepotPostgres
import Foundation

// usage: PGImportBench URL SCHEMA DATA.csv WORKDIR
let args = CommandLine.arguments
guard args.count == 5 else {
    FileHandle.standardError.write(Data("usage: PGImportBench URL SCHEMA DATA.csv WORKDIR\n".utf8))
    exit(64)
}
let trip = try EntitySchema(
    name: "Trip",
    fields: [Field(name: "id", type: .string), Field(name: "name", type: .string),
             Field(name: "destination", type: .string, isOptional: true), Field(name: "startDate", type: .date),
             Field(name: "endDate", type: .date, isOptional: true), Field(name: "budget", type: .double),
             Field(name: "isFavorite", type: .bool), Field(name: "notes", type: .string, isOptional: true)],
    identifier: ["id"], indexes: [["destination"], ["startDate"]], preserveOnDelete: ["name"],
    history: HistoryDetail(rawValue: ProcessInfo.processInfo.environment["HISTORY"] ?? "values") ?? .values)
let location = try PostgresLocation(url: args[1], schema: args[2])
try await PostgresStore.dropSchema(location)
let store = try await PostgresStore.open(PostgresStoreConfiguration(name: "bench", location: location, entities: [trip]))
var options = ImportOptions(format: .csv)
if let n = ProcessInfo.processInfo.environment["SAVE_EVERY"].flatMap(Int.init) { options.saveEvery = n }
let start = ContinuousClock.now
let result = try await Importer.run(
    ImportRequest(job: "bench", entity: "Trip", path: args[3], rejectsPath: args[4] + "/pg-bench.rejects", options: options),
    into: store)
let elapsed = ContinuousClock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let stored = try await store.count("Trip")
print(String(format: "depot %.2f s %d rows/s inserted %d updated %d unchanged %d duplicates %d rejected %d saves %d stored %d",
             seconds, Int(Double(result.read) / seconds), result.inserted, result.updated, result.unchanged,
             result.duplicates, result.rejected, result.saves, stored))
await store.close()
