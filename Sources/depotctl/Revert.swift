import ArgumentParser
import DepotClient
import Foundation

struct Revert: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take back a history transaction, or every transaction of a job, as a job.",
        discussion: """
            Writes the inverse of the changes (an insert deleted, a delete inserted again, \
            an update's fields set back) as a new transaction authored revert:…; cascades \
            and nullified references come back with their delete. The entities touched \
            must keep values (history = "values"). A record changed again since in the \
            same fields is a conflict: --on-conflict skip (the default) leaves it and lists \
            it in the job's rejects, fail stops the job, force takes it back all the same.

            Example:
              depotctl revert travel --token 41
              depotctl revert travel --job j5c1e0d2a9b3f --on-conflict fail
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store to change.", valueName: "store")) var store: String
    @Option(help: ArgumentHelp("The history transaction to take back.", valueName: "token")) var token: String?
    @Option(help: ArgumentHelp("The job whose transactions to take back.", valueName: "id")) var job: String?
    @Option(
        name: .customLong("on-conflict"),
        help: ArgumentHelp("What a record changed again since gets: skip, fail or force.", valueName: "policy"))
    var onConflict: String = "skip"

    func validate() throws {
        if (token == nil) == (job == nil) { throw ValidationError("say what to revert: --token T or --job ID.") }
        if !["skip", "fail", "force"].contains(onConflict) {
            throw ValidationError("--on-conflict takes skip, fail or force, not \"\(onConflict)\".")
        }
    }

    func execute(_ client: DaemonClient) async throws {
        var request = JobRequest(kind: "revert", store: store)
        request.settings.token = token
        request.settings.job = job
        request.settings.onConflict = onConflict
        let accepted = try await client.submit(request)
        let last = try await JobFlow.follow(client, accepted.id, quiet: global.json)
        try JobFlow.finish(last, json: global.json) {
            var line =
                "reverted \(token.map { "token \($0)" } ?? "job \(job ?? "")") of \(store): "
                + "\(Format.grouped($0.inserted)) inserted again, \(Format.grouped($0.updated)) set back, "
                + "\(Format.grouped($0.deleted)) deleted"
            if $0.rejected > 0 {
                line += "; \(Format.grouped($0.rejected)) changed since, left (depotctl job \($0.id) --rejects)"
            }
            return line
        }
    }
}
