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
        let health = String(decoding: try await client.call(.GET, "/v1/health"), as: UTF8.self)
        let storesText = String(decoding: try await client.call(.GET, "/v1/stores"), as: UTF8.self)
        if global.json {
            Out.line(
                "{\"socket\":\(JSONValue.quoted(global.socketPath)),\"health\":\(health.trimmed),\"stores\":\(storesText.trimmed)}"
            )
            return
        }
        struct Health: Decodable {
            struct Counts: Decodable { var running: Int; var queued: Int }
            var status: String
            var jobs: Counts
        }
        let h = try JSONDecoder().decode(Health.self, from: Data(health.utf8))
        let stores = try JSONDecoder().decode(StoreList.self, from: Data(storesText.utf8)).stores
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
