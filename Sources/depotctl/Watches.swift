import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Watches: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the watched folders and their files waiting, done and failed.",
        discussion: """
            Each [[watch]] of the daemon's configuration: the folder, the store and entity \
            it feeds, and how many of its files wait for their import, were imported \
            (in .done/) or failed (in .failed/, each with NAME.error.json saying why).

            Example:
              depotctl watches
            """)
    @OptionGroup var global: Global

    func execute(_ client: DaemonClient) async throws {
        let watches = try await client.watches()
        if global.json { try Out.json(WatchList(watches: watches)); return }
        var table = Table(
            ["FOLDER", "FEEDS", "FORMAT", "ON CONFLICT", "WAITING", "DONE", "FAILED"], rightAligned: [4, 5, 6])
        for w in watches {
            table.add([
                w.path, "\(w.store).\(w.entity)", w.format, w.onConflict, Format.grouped(w.pending),
                Format.grouped(w.done), Format.grouped(w.failed)
            ])
        }
        Out.line(
            watches.isEmpty ? "no watched folders ([[watch]] in the daemon's configuration adds one)" : table.render())
    }
}
