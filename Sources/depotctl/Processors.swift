import ArgumentParser
import DepotClient
import Foundation

struct Processors: DepotCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a store's processors, with their progress.",
        discussion: """
            A processor goes through the records that matched its predicate when it was \
            created, in batches handed out to programs under leases (POST \
            /v1/stores/STORE/processors; DepotClient's process); each batch's changes and \
            the processor's move commit together, so every batch is applied once. DONE and \
            TOTAL count records, BATCHES the committed ones, LEASED those a client holds \
            now; RATE is records a second since its creation, ETA the time left at it.

            Example:
              depotctl processors travel
              depotctl processors travel --json
            """)
    @OptionGroup var global: Global
    @Argument(help: ArgumentHelp("The store whose processors to list.", valueName: "store")) var store: String

    func execute(_ client: DaemonClient) async throws {
        let processors = try await client.processors(store: store)
        if global.json { try Out.json(ProcessorList(processors: processors)); return }
        guard !processors.isEmpty else {
            Out.line("no processors on \(store) (POST /v1/stores/\(store)/processors creates one)")
            return
        }
        var table = Table(
            ["NAME", "ENTITY", "DONE", "TOTAL", "BATCHES", "LEASED", "RATE", "ETA", "STATE"],
            rightAligned: [2, 3, 4, 5, 6, 7])
        for p in processors {
            table.add([
                p.name, p.entity, Format.grouped(p.done), Format.grouped(p.total), "\(p.batchesDone)/\(p.batches)",
                Format.grouped(p.leased), "\(Format.grouped(Int(p.rate)))/s", p.eta.map(Format.duration) ?? "-", p.state
            ])
        }
        Out.line(table.render())
    }
}
