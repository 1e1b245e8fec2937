// A child process for the crash test (ImportCrashTests): imports a file into
// a store of the tests' Trip entity, printing "save N" after each save so
// that the parent can kill it with SIGKILL at a known point, and "done JSON"
// with the final counters.
//
// usage: ImportChild STORE INPUT REJECTS FORMAT SAVE_EVERY [ON_CONFLICT [SORT_RUN MERGE_RUN]]
import ChildProcessSupport
import DepotEngine
import Foundation

let args = CommandLine.arguments
guard [6, 7, 9].contains(args.count), let format = ImportOptions.Format(rawValue: args[4]),
    let saveEvery = Int(args[5]), let policy = ConflictPolicy(rawValue: args.count >= 7 ? args[6] : "upsert")
else {
    say("usage: ImportChild STORE INPUT REJECTS FORMAT SAVE_EVERY [ON_CONFLICT [SORT_RUN MERGE_RUN]]")
    exit(64)
}
do {
    let trip = try EntitySchema(
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
        ],
        identifier: ["id"], indexes: [["destination"], ["startDate"]], preserveOnDelete: ["name"])
    let store = try await Store.open(StoreConfiguration(name: "travel", path: args[1], entities: [trip]))
    var options = ImportOptions(format: format, onConflict: policy, saveEvery: saveEvery)
    options.saveInterval = .seconds(3600)
    // Records sorted in memory at a time, and merged into runs of (sorted
    // parts spilled to a file): small, so that 3,000 records make several.
    if args.count == 9, let sortRun = Int(args[7]), let mergeRun = Int(args[8]) {
        options.sortRun = sortRun
        options.mergeRun = mergeRun
    }
    let request = ImportRequest(job: "crash", entity: "Trip", path: args[2], rejectsPath: args[3], options: options)
    let result = try await Importer.run(request, into: store) { progress in
        say("save \(progress.saves)")
    }
    var final = result
    final.elapsed = 0
    final.lastSaveSeconds = nil
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    say("done " + String(decoding: try encoder.encode(final), as: UTF8.self))
    try await store.close()
} catch {
    say("error \(error)")
    exit(1)
}
