import ArgumentParser
import DepotClient
import Foundation
import NIOHTTP1

struct Status: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether the daemon runs, its stores and its jobs.",
        discussion: """
            Prints each store with its entities, their record counts and the latest \
            history token, and how many jobs run and wait.

            Example:
              depotctl status
              depotctl status --json | jq '.stores[].name'
            """)
    @OptionGroup var global: Global

    func execute(_ client: DaemonClient) async throws {
        let h = try await client.health()
        let stores = try await client.stores()
        if global.json {
            /// What `status --json` prints: the socket, the health and the stores.
            struct Status: Encodable {
                var socket: String
                var health: Health
                var stores: StoreList
            }
            try Out.json(Status(socket: global.socketPath, health: h, stores: StoreList(stores: stores)))
            return
        }
        Out.line("depotd at \(global.socketPath): \(h.status)")
        var table = Table(["STORE", "ENTITY", "RECORDS", "TOKEN", "FILE"], rightAligned: [2, 3])
        for store in stores {
            for entity in store.entities {
                table.add([store.name, entity.name, Format.grouped(entity.count), store.token ?? "-", store.path])
            }
        }
        Out.line(table.render())
        Out.line("jobs: \(h.jobs.running) running, \(h.jobs.queued) queued")
    }
}
