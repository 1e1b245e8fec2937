// The engine-only import benchmark: imports the trips data set of bench/gen.py
// through the same Importer the daemon runs (upsert, history on), with no
// daemon, socket or upload. Run with `bench/run-import --engine`, which also
// times the daemon path and sqlite3's `.import` in the same run.
import DepotEngine
import DepotWire
import Foundation

func rssPeakKB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
}

// usage: ImportBench DATA.csv|DATA.ndjson WORKDIR [SAVE_EVERY SAVE_INTERVAL_SECONDS]
// As depotd does (see its main.swift).
ProcessMemory.returnLargeBuffers()
let args = CommandLine.arguments
guard args.count == 3 || args.count == 5 else {
    FileHandle.standardError.write(Data("usage: ImportBench DATA.csv|DATA.ndjson WORKDIR [SAVE_EVERY SAVE_INTERVAL_SECONDS]\n".utf8))
    exit(64)
}
let input = args[1], work = args[2]
var options = ImportOptions(format: ImportOptions.Format(fileName: input) ?? .csv)
if args.count == 5 {
    options.saveEvery = Int(args[3])
    options.saveInterval = .milliseconds(Int((Double(args[4]) ?? 1) * 1000))
}
// HISTORY=values keeps the values of changes (DESIGN §11); DESIGN_INDEXES=1
// adds the DESIGN §8 entity's indexes and preserve_on_delete.
let environment = ProcessInfo.processInfo.environment
// SORT_RUN sets the records sorted by identifier at a time (0: none).
if let n = environment["SORT_RUN"].flatMap(Int.init) { options.sortRun = n }
// DEPOT_IMPORT_MERGE_RUN sets the records of a merged run (0: runs of SORT_RUN
// in memory only), read by ImportOptions itself.
let history = HistoryDetail(rawValue: environment["HISTORY"] ?? "fields") ?? .fields
let designIndexes = environment["DESIGN_INDEXES"] == "1"
let trip = try EntitySchema(
    name: "Trip",
    fields: [Field(name: "id", type: .string), Field(name: "name", type: .string),
             Field(name: "destination", type: .string, isOptional: true), Field(name: "startDate", type: .date),
             Field(name: "endDate", type: .date, isOptional: true), Field(name: "budget", type: .double),
             Field(name: "isFavorite", type: .bool), Field(name: "notes", type: .string, isOptional: true)],
    identifier: ["id"], indexes: designIndexes ? [["destination"], ["startDate"]] : [],
    preserveOnDelete: designIndexes ? ["name"] : [], history: history)
let storePath = work + "/bench.sqlite"
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
var configuration = StoreConfiguration(name: "bench", path: storePath, entities: [trip])
// As depotd configures a store that sets neither save_every nor save_interval.
configuration.adaptiveSaves = true
// CACHE_MB overrides the writer's page cache, for experiments.
if let mb = ProcessInfo.processInfo.environment["CACHE_MB"].flatMap(Int.init) { configuration.writerCacheBytes = mb << 20 }
// WAL_CHECKPOINT sets wal_autocheckpoint in pages (0: none during the import), for experiments.
if let pages = ProcessInfo.processInfo.environment["WAL_CHECKPOINT"].flatMap(Int.init) {
    configuration.walAutocheckpointPages = pages
}
// CHANGES_PER_STATEMENT sets the history rows inserted by one statement (1: one by one), for experiments.
if let n = ProcessInfo.processInfo.environment["CHANGES_PER_STATEMENT"].flatMap(Int.init) {
    configuration.changesPerStatement = n
}
let store = try await Store.open(configuration)
let start = ContinuousClock.now
let result = try await Importer.run(
    ImportRequest(job: "bench", entity: "Trip", path: input, rejectsPath: work + "/bench.rejects", options: options),
    into: store)
let elapsed = ContinuousClock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let rows = result.read
print(String(format: "depot %@ (history %@): %d rows in %.2f s = %.0f rows/s (inserted %d, duplicates %d, updated %d, rejected %d, saves %d), peak RSS %d MB",
             options.format.rawValue, history.rawValue, rows, seconds, Double(rows) / seconds, result.inserted, result.duplicates,
             result.updated, result.rejected, result.saves, rssPeakKB() / 1024))
